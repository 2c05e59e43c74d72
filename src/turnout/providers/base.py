"""The common body of the HTTP provider adapters: one wire format over one `Transport`.

A provider kind (openai, anthropic, …) only says where to send a request (`chat_url`), how to
authenticate (its headers) and which wire format it speaks (a `Wire`, from
`turnout.providers._wire`); `HttpProvider` does the rest: same-format fast path or encoding,
the call (prepared by `turnout.providers._prepare`), decoding answers and streams, and errors
through `transport.error_for_status` / `error_for_exception` (the one place they are mapped).

Rule 1: when `request.source` is in the provider's own format, the caller's bytes are sent with
only `model` replaced (`forward_body`), and the upstream's bytes come back in `raw`. A kind with
`supports_responses` also takes a caller's own Responses request that way, at `responses_url`;
every other request is encoded in the kind's `wire`.
Rule 2: a malformed stream event is skipped and counted (`malformed_events`); a stream that ends
after a finish reason is complete even without its terminator; one that ends without a finish
reason raises `ProviderUnavailable` ("stream ended early"); an event larger than
`max_response_bytes` raises `ProviderUnavailable` ("answer larger than …") where it is met.
Rule 3: every error raised by a call names the provider and, when the upstream sent one, its
request id.
Rule 4: credentials. An `org_key` provider sends its own `api_key` on every
call. A `passthrough` provider has no key of its own: only the per-call view that
`with_credential` returns carries the caller's credential (its header is made when the call
is), and the provider itself refuses a call (`AuthenticationFailed`, nothing sent) rather than
send it upstream without one. An `auth` failure of an `org_key` provider says whose key was
refused (`provider "openai" rejected its configured key: <the vendor's message>`); a
passthrough provider's keeps the vendor's message as it is, since the key was the caller's.
Rule 5: whatever fails while a call is prepared (model, body, headers, credential, URL) is
raised as a `ProviderError` that is never the provider's fault (`MalformedRequest` or
`local_error`); the rule is kept with that preparation, in `turnout.providers._prepare`.
Rule 6: no secret an upstream echoes goes further: every error made from an upstream's words
(an error status, a body or stream event that does not decode) has the provider's own key,
its extra header values, the caller's credential of a passthrough call and `options.secrets`
scrubbed, and anything shaped like a key or token (`transport` Rule 7).
Rule 7: a stream for a source in the call's own format that asks to `relay` (its caller
forwards the events' bytes and reads none of their content) skips decoding the plain content
events (`RelayDecoder.plain`: text deltas, checked as JSON but not turned into neutral
chunks); each run of them in one read comes as one opaque chunk of their bytes, carrying
content. Every other event (the first, the finish reason, the usage, errors, tool calls) is
decoded as always, in order, so what the stream's end and the routing record need is known.
"""

from __future__ import annotations

import copy
import functools
import os
from types import MappingProxyType
from typing import TYPE_CHECKING, ClassVar, Literal, Protocol, TypeVar
from urllib.parse import quote

from turnout.errors import (
    AuthenticationFailed,
    InvalidRequest,
    ProviderError,
)
from turnout.providers._keywords import (
    CREDENTIAL_MODES,
    CredentialMode,
    HttpProviderKeywords,
    ProviderKeywords,
    credential_mode_of,
    http_options,
    refuse_unknown_keywords,
    transport_for,
)
from turnout.providers._prepare import (
    chat_body,
    common_headers,
    forwarded_headers,
    prepare_chat,
    prepare_embeddings,
)
from turnout.providers._prices import ModelBook, read_prices
from turnout.providers._status import status_error
from turnout.providers._stream import EventChunks, check_finished, decode_event
from turnout.providers._wire import (
    ANTHROPIC_MESSAGES,
    GEMINI_GENERATE,
    OPENAI_CHAT,
    OPENAI_CHAT_COMPATIBLE,
    OPENAI_RESPONSES,
    StreamDecoder,
    Wire,
)
from turnout.providers.facts import ClientFacts
from turnout.providers.settings import ConfigRules
from turnout.providers.transport import (
    HttpOptions,
    Transport,
    local_error,
    redact_error,
    request_id_of,
    too_large_error,
)
from turnout.vendors.redact import secrets_of
from turnout.wire import openai_embeddings
from turnout.wire.sse import EventTooLarge

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Mapping
    from typing import Self, Unpack

    from turnout.providers.settings import KeyedFields, ProviderBuild
    from turnout.routing.model_info import ModelInfo, ModelPrice
    from turnout.routing.plan import CallerCredential
    from turnout.wire.model import (
        ChatChunk,
        ChatRequest,
        ChatResponse,
        EmbeddingRequest,
        EmbeddingResponse,
        WireFormat,
    )
    from turnout.wire.sse import SSEEvent

__all__ = [
    "ANTHROPIC_MESSAGES",
    "CREDENTIAL_MODES",
    "GEMINI_GENERATE",
    "OPENAI_CHAT",
    "OPENAI_CHAT_COMPATIBLE",
    "CredentialMode",
    "EmbeddingsSupport",
    "HttpProvider",
    "HttpProviderKeywords",
    "KeyedProvider",
    "ProviderKeywords",
    "ResponsesSupport",
    "Wire",
    "facts_of",
    "refuse_unknown_keywords",
]


class _Answer(Protocol):
    """A decoded answer that carries the vendor's request id (a chat's, an embedding's)."""

    provider_request_id: str | None


_AnswerT = TypeVar("_AnswerT", bound=_Answer)


class HttpProvider:
    """A `ChatClient` for one account of one vendor, speaking one wire format over HTTP.

    Subclasses set `kind`, implement `chat_url(model)` and say what they speak: `wire` (the wire
    format and its codecs; required), `family` (default none) and `vendor` (the vendor catalog
    entry that reads its errors; default none), as class attributes or, where they vary per
    instance, as keywords of `HttpProvider.__init__`, which also takes `auth_headers` (the
    kind's own protocol headers, e.g. `anthropic-version`) and reads the environment variable
    `api_key_env` when no `api_key` is given. Every kind takes `name` (the provider id, part of
    the default health key), `api_key` (sent in the kind's credential header,
    `credential_headers`), `options` (an `HttpOptions`: extra headers, timeouts, pool size, the
    largest answer; default `HttpOptions()`), and the keywords of `HttpProviderKeywords` (each
    one's meaning is said there).
    """

    kind: ClassVar[str] = "http"
    api_key_env: ClassVar[str | None] = None
    """The environment variable read for `api_key` when none is given (None: none is read)."""
    wire: Wire
    family: str = "none"
    vendor: str | None = None
    supports_responses: bool = False
    """Whether the kind serves OpenAI's Responses API itself (`responses_url`), so that a
    caller's Responses request is forwarded rather than translated."""

    def __init__(
        self,
        *,
        name: str,
        base_url: str,
        wire: Wire | None = None,
        family: str | None = None,
        vendor: str | None = None,
        auth_headers: Mapping[str, str] | None = None,
        api_key: str | None = None,
        options: HttpOptions | None = None,
        **keywords: Unpack[HttpProviderKeywords],
    ) -> None:
        refuse_unknown_keywords(self, keywords, HttpProviderKeywords.__optional_keys__)
        credential_mode = credential_mode_of(keywords)
        options = http_options(options, keywords)
        self.name = name
        self._speak(wire, family, vendor)
        self.credential_mode: CredentialMode = credential_mode
        self._needs_credential = credential_mode == "passthrough"
        self._caller: CallerCredential | None = None
        if api_key is None and self.api_key_env is not None:
            api_key = os.environ.get(self.api_key_env)
        own_key = self.credential_headers(api_key) if api_key and not self._needs_credential else {}
        self.base_url = base_url.rstrip("/")
        self.model = keywords.get("model")
        self.provider_id = keywords.get("provider_id")
        self.options = options
        self.timeouts = options.timeouts
        self.malformed_events = 0
        # Rule 6: what this provider's errors never repeat.
        shown = [*own_key.values(), *options.headers.values()]
        self._secrets = secrets_of(shown) + tuple(options.secrets)
        self._headers = common_headers(options, auth_headers or {}, own_key)
        self._aliases = dict(keywords.get("model_aliases") or {})
        self._book = ModelBook(
            read_prices(keywords.get("prices")), self._aliases, keywords.get("catalog")
        )
        self._transport: Transport = transport_for(name, options, keywords.get("transport"))

    def _speak(self, wire: Wire | None, family: str | None, vendor: str | None) -> None:
        """The instance's own wire, family and vendor where given, else its class's."""
        if wire is not None:
            self.wire = wire
        elif not hasattr(self, "wire"):
            raise TypeError(f"{type(self).__name__} names no wire format (`wire`)")
        if family is not None:
            self.family = family
        if vendor is not None:
            self.vendor = vendor

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, base_url={self.base_url!r})"

    @functools.cached_property
    def facts(self) -> ClientFacts:
        """What this provider offers beyond a chat call (`ClientFacts`), read when first
        asked and then kept."""
        return ClientFacts.of(self)

    @property
    def provider(self) -> str:
        """The provider id (its `name`)."""
        return self.name

    @property
    def wire_format(self) -> WireFormat:
        """The wire format this provider speaks."""
        return self.wire.format

    @property
    def wire_formats(self) -> frozenset[WireFormat]:
        """Every wire format this provider serves natively: its `wire`, and OpenAI Responses
        when it `supports_responses`."""
        if self.supports_responses:
            return frozenset((self.wire.format, OPENAI_RESPONSES.format))
        return frozenset((self.wire.format,))

    def wire_for(self, request: ChatRequest) -> Wire:
        """The wire a call for `request` speaks: Responses for a caller's own Responses request
        when this kind serves it, else the kind's `wire`."""
        source = request.source
        if (
            self.supports_responses
            and source is not None
            and source.format == OPENAI_RESPONSES.format
        ):
            return OPENAI_RESPONSES
        return self.wire

    def responses_url(self, model: str) -> str:
        """The URL of the Responses endpoint (`supports_responses` kinds only)."""
        raise NotImplementedError

    @property
    def model_aliases(self) -> Mapping[str, str]:
        """The provider's `model_aliases` (requested -> wire model), read-only."""
        return MappingProxyType(self._aliases)

    def price_for(self, model: str | None) -> tuple[float, float] | None:
        """USD per 1M (input, output) tokens for `model`, or None when unknown."""
        price = self._book.price(model)
        return None if price is None else (price.input, price.output)

    def model_price(self, model: str | None) -> ModelPrice | None:
        """The full price of `model` (cache prices, and whether it is the provider's own
        `prices` or the `catalog`'s), or None when unknown."""
        return self._book.price(model)

    def model_info(self, model: str | None) -> ModelInfo | None:
        """What the provider's `catalog` says of `model` (or of its wire model), or None."""
        return self._book.info(model)

    def wire_model(self, model: str | None) -> str:
        """The model to send upstream: `model` (or the provider's default) through the aliases."""
        chosen = model or self.model
        if not chosen:
            raise InvalidRequest(
                f"provider {self.name!r}: the request names no model and the provider has no "
                "default model",
                status=400,
                provider=self.name,
            )
        return self._aliases.get(chosen, chosen)

    def chat_url(self, model: str) -> str:
        """The URL of the chat endpoint for `model`."""
        raise NotImplementedError

    def stream_url(self, model: str) -> str:
        """The URL of a streamed chat call for `model` (the chat URL, unless the kind's API
        streams elsewhere)."""
        return self.chat_url(model)

    def credential_headers(self, secret: str, *, bearer: bool = False) -> dict[str, str]:
        """The header carrying a credential on this kind's calls: `Authorization: Bearer`
        (OpenAI-style APIs). `bearer` says a caller sent its credential as a bearer token,
        for kinds whose API tells the two apart."""
        del bearer
        return {"authorization": f"Bearer {secret}"}

    def with_credential(self, credential: CallerCredential) -> Self:
        """This passthrough provider for one call made with the caller's own `credential`
        (the same connection pool; the credential lives only in the returned view). An
        `org_key` provider refuses with `ValueError`: it uses its own key, never a caller's."""
        if not self._needs_credential:
            raise ValueError(
                f"provider {self.name!r} uses its own credential (credential_mode org_key);"
                " it never takes a caller's"
            )
        view = copy.copy(self)
        view._caller = credential
        return view

    def sent_headers(self) -> Mapping[str, str]:
        """The headers every call sends; a passthrough provider with no caller's credential
        refuses (Rule 4) with `AuthenticationFailed` (401), before anything is sent."""
        if self._needs_credential:
            caller = self._caller
            if caller is None:
                raise AuthenticationFailed(
                    f"provider {self.name!r} forwards the caller's own credential"
                    " (credential_mode passthrough) and this call carries none; nothing was sent",
                    status=401,
                    reason="no caller credential",
                    provider=self.name,
                )
            secret = self.credential_headers(caller.reveal(), bearer=caller.bearer)
            return {**self._headers, **secret}
        return self._headers

    def call_headers(self, request: ChatRequest) -> Mapping[str, str]:
        """The headers of one chat call: the provider's own; for a caller's own Anthropic
        Messages request, with its `anthropic-version` and `anthropic-beta`."""
        return forwarded_headers(self.sent_headers(), request, self.wire.format)

    def body_for(
        self, request: ChatRequest, model: str, *, stream: bool, wire: Wire | None = None
    ) -> bytes:
        """Rule 1: the caller's own bytes when they are in the call's format (`wire`, default
        the kind's), else encoded."""
        return chat_body(wire or self.wire, request, model, stream=stream)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """One whole answer. Failures raise `ProviderError` subclasses."""
        wire = self.wire_for(request)
        model, url, body, headers = prepare_chat(self, request, stream=False, wire=wire)
        response = await self._post_answer(url, body, headers, wire.decode)
        if response.model is None:
            response.model = model
        return response

    async def stream(self, request: ChatRequest) -> AsyncIterator[ChatChunk]:
        """The answer as neutral chunks; the last ones carry the finish reason and usage.

        When the request's source is in the call's format and asks to `relay` (Rule 7), the
        plain content events of each read come as one opaque chunk of their bytes.
        """
        wire = self.wire_for(request)
        _, url, body, headers = prepare_chat(self, request, stream=True, wire=wire)
        async with self._transport.stream(url, body, headers) as reply:
            request_id = request_id_of(reply.headers)
            if not 200 <= reply.status < 300:
                self._check_status(reply.status, reply.headers, await reply.read())
            source = request.source
            chunks = EventChunks(
                wire,
                relay=source is not None and source.relay and source.format == wire.format,
                max_event_bytes=self.options.max_response_bytes,
                request_id=request_id,
                named=self._named,
            )
            try:
                async for data in reply.chunks():
                    for chunk in chunks.feed(data):
                        yield chunk
                for chunk in chunks.flush():
                    yield chunk
            except EventTooLarge as exc:
                error = too_large_error(exc.limit, provider=self.name)
                raise self._named(error, request_id) from None
            finally:
                self.malformed_events += chunks.decoder.malformed
            check_finished(chunks.decoder, self.name, request_id)

    def _decode(
        self, decoder: StreamDecoder, event: SSEEvent, request_id: str | None
    ) -> list[ChatChunk]:
        return decode_event(decoder, event, request_id, self._named)

    async def _post_answer(
        self, url: str, body: bytes, headers: Mapping[str, str], decode: Callable[[bytes], _AnswerT]
    ) -> _AnswerT:
        """One whole call: `body` posted, an error status raised as its error, the answer
        decoded and stamped with the vendor's request id (a decoding failure named with it)."""
        reply = await self._transport.post(url, body, headers)
        request_id = request_id_of(reply.headers)
        self._check_status(reply.status, reply.headers, reply.body)
        try:
            response = decode(reply.body)
        except ProviderError as exc:
            raise self._named(exc, request_id) from None
        response.provider_request_id = request_id
        return response

    def _check_status(self, status: int, headers: Mapping[str, str], body: bytes) -> None:
        """An error status raised as its error (Rules 3, 4 and 6); a 2xx passes."""
        if not 200 <= status < 300:
            own_key = self.credential_mode == "org_key"
            raise status_error(
                status,
                headers,
                body,
                provider=self.name,
                vendor=self.vendor,
                secrets=self._call_secrets(),
                own_key=own_key,
            )

    def _named(self, exc: ProviderError, request_id: str | None) -> ProviderError:
        """Rule 3: the error with this provider's name and the request id (and Rule 6: its
        upstream's words scrubbed)."""
        exc.provider = exc.provider or self.name
        exc.provider_request_id = exc.provider_request_id or request_id
        return redact_error(exc, self._call_secrets())

    def _call_secrets(self) -> tuple[str, ...]:
        """Rule 6: the secrets of this call: the provider's, and a caller's credential."""
        caller = self._caller
        return self._secrets if caller is None else (*self._secrets, caller.reveal())

    async def aclose(self) -> None:
        """Close the pooled connections (the provider reopens them if used again)."""
        await self._transport.aclose()


def facts_of(client: object) -> ClientFacts:
    """The facts of `client`: a provider adapter's own, kept since first asked; any other
    client's, read now."""
    if isinstance(client, HttpProvider):
        return client.facts
    return ClientFacts.of(client)


class KeyedProvider(HttpProvider):
    """An `HttpProvider` of a vendor's own API, built from a key and a base URL (`openai`,
    `anthropic`, `gemini`): `from_config` reads `KeyedFields`, and `default_base_url` stands
    in for a `base_url` left out (the kind's name for a `name` left out)."""

    default_base_url: ClassVar[str]
    config_rules: ClassVar[ConfigRules] = ConfigRules()
    """Nothing beyond the fields' types: a key and a base URL, both optional."""

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        name: str | None = None,
        auth_headers: Mapping[str, str] | None = None,
        options: HttpOptions | None = None,
        **keywords: Unpack[HttpProviderKeywords],
    ) -> None:
        super().__init__(
            name=self.kind if name is None else name,
            base_url=self.default_base_url if base_url is None else base_url,
            auth_headers=auth_headers,
            api_key=api_key,
            options=options,
            **keywords,
        )

    @classmethod
    def from_config(cls, config: KeyedFields, build: ProviderBuild) -> Self:
        """The provider `config` describes; a missing `api_key` is no key, never the
        environment's."""
        url = config.base_url or cls.default_base_url
        key = config.api_key or ""
        return cls(
            name=config.name, base_url=url, api_key=key, options=build.options, **build.keywords
        )


class ResponsesSupport(HttpProvider):
    """An `HttpProvider` that serves OpenAI's Responses API itself (at `responses_url`): a
    caller's own Responses request is forwarded, and the responses it stores can be read
    and deleted (`stored_response`)."""

    supports_responses = True

    async def stored_response(self, method: Literal["GET", "DELETE"], response_id: str) -> bytes:
        """`GET` or `DELETE` a response this provider's Responses endpoint created
        (`{responses_url}/{response_id}`): the upstream's body. An error status raises as a
        call's does (mapped, scrubbed, naming this provider)."""
        try:
            base, _, query = self.responses_url("").partition("?")
            url = f"{base}/{quote(response_id, safe='')}" + (f"?{query}" if query else "")
            headers = self.sent_headers()
            send = self._transport.request  # type: ignore[attr-defined]
        except ProviderError:
            raise
        except Exception as exc:
            raise local_error(exc, provider=self.name) from exc
        reply = await send(method, url, b"", headers)
        self._check_status(reply.status, reply.headers, reply.body)
        body: bytes = reply.body
        return body


class EmbeddingsSupport(HttpProvider):
    """An `HttpProvider` that also serves OpenAI-style embeddings (`embed`)."""

    supports_embeddings: bool = True

    def embeddings_url(self, model: str) -> str:
        """The URL of the embeddings endpoint for `model`."""
        return f"{self.base_url}/embeddings"

    async def embed(self, request: EmbeddingRequest) -> EmbeddingResponse:
        """Embedding vectors for `request.input`, in input order."""
        if not self.supports_embeddings:
            raise InvalidRequest(
                f"provider {self.name!r} does not serve embeddings",
                status=400,
                reason="embeddings_not_supported",
                provider=self.name,
            )
        model, url, body, headers = prepare_embeddings(self, request)
        response = await self._post_answer(url, body, headers, openai_embeddings.decode_response)
        if response.model is None:
            response.model = model
        return response
