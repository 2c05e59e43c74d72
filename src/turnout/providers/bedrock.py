"""The `bedrock` provider kind: AWS Bedrock Runtime, SigV4-signed (family anthropic for Claude
models, else none).

Rule 1: the wire is chosen per model: Claude models (`turnout.wire.bedrock_anthropic.is_claude`)
speak Anthropic Messages through InvokeModel / InvokeModelWithResponseStream, every other model
Converse / ConverseStream; `api` (`converse` or `invoke`) forces one for every model.
Rule 2: on the invoke wire a caller's own Messages body is forwarded with only the Bedrock
changes (no `model` or `stream`, `anthropic_version: bedrock-2023-05-31`, the caller's
`anthropic-beta` as `anthropic_beta`), so `cache_control`, thinking and betas survive, and the
answer comes back in the caller's format byte for byte (a stream event by event).
Rule 3: the model id is one escaped path segment (`/model/{modelId}/converse`), so an ARN or an
id with `:` can never change the path.
Rule 4: every call is signed (`turnout.providers._aws_auth`); the kind has no key of its own
and never forwards a caller's credential (`credential_mode` is always `org_key`).
Rule 5: streams are AWS event-stream frames (`turnout.wire.aws_eventstream`): an exception
frame raises the error its type names, classified as a whole call's would be; broken framing
raises `ProviderUnavailable`, and so does a stream that ends before its finish reason (cut
inside a frame or between two); one cut after its finish reason is complete (base Rule 2),
without the usage a lost `metadata` frame held.
Rule 6: errors are read by `turnout.vendors.aws_errors` (type from `x-amzn-ErrorType` or
`__type`), then classified by the vendor catalog's `bedrock` entry; the request id is
`x-amzn-requestid` (`turnout.providers.transport`).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Literal, Protocol
from urllib.parse import quote

import orjson

from turnout.errors import ConfigError, ProviderError, ProviderUnavailable
from turnout.providers._aws_auth import AwsSigner
from turnout.providers._prepare import UNENCODABLE, unencodable
from turnout.providers._stream import check_finished
from turnout.providers.base import HttpProvider, Wire
from turnout.providers.settings import ConfigRules, NamedFields
from turnout.providers.transport import error_for_status, local_error, request_id_of
from turnout.vendors.aws_errors import bedrock_error
from turnout.wire import anthropic_messages, bedrock_anthropic, bedrock_converse
from turnout.wire.aws_eventstream import EventStreamDecoder, EventStreamError
from turnout.wire.sse import SSEEvent

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping
    from typing import Self, Unpack

    from turnout.providers._wire import StreamDecoder
    from turnout.providers.base import HttpProviderKeywords
    from turnout.providers.settings import ProviderBuild
    from turnout.providers.transport import HttpOptions
    from turnout.wire.aws_eventstream import Frame
    from turnout.wire.model import ChatChunk, ChatRequest, ChatResponse, WireFormat

__all__ = [
    "APIS",
    "BEDROCK_CONVERSE",
    "BEDROCK_INVOKE",
    "Bedrock",
    "BedrockFields",
    "default_base_url",
]

BedrockApi = Literal["converse", "invoke"]
APIS: tuple[BedrockApi, ...] = ("converse", "invoke")


def default_base_url(region: str) -> str:
    """`https://bedrock-runtime.{region}.amazonaws.com`."""
    return f"https://bedrock-runtime.{region}.amazonaws.com"


def _no_forward(source: bytes, model: str, stream: bool, parsed: Mapping[str, Any] | None) -> bytes:
    raise NotImplementedError("no caller speaks Bedrock Converse")


BEDROCK_CONVERSE = Wire(
    "bedrock-converse",
    lambda request, model: bedrock_converse.encode_request(request, model=model),
    _no_forward,
    bedrock_converse.decode_response,
    bedrock_converse.StreamDecoder,
)
BEDROCK_INVOKE = Wire(
    "anthropic-messages",
    lambda request, model: bedrock_anthropic.encode_request(request, model=model),
    lambda source, model, stream, parsed: bedrock_anthropic.forward_body(source),
    anthropic_messages.decode_response,
    anthropic_messages.StreamDecoder,
)


class BedrockFields(NamedFields, Protocol):
    """What a `bedrock` provider reads of its configuration: its region, API and AWS
    credentials (it takes no `api_key`)."""

    @property
    def region(self) -> str | None: ...

    @property
    def api(self) -> BedrockApi | None: ...

    @property
    def access_key_id(self) -> str | None: ...

    @property
    def secret_access_key(self) -> str | None: ...

    @property
    def session_token(self) -> str | None: ...

    @property
    def profile(self) -> str | None: ...


class Bedrock(HttpProvider):
    """AWS Bedrock Runtime (`kind: bedrock`).

    `region` (default `us-east-1`) names the endpoint and the signing region; `base_url`
    (default `https://bedrock-runtime.{region}.amazonaws.com`) stands in for it (a test's
    mock, a private endpoint); `api` (`converse` or `invoke`; default by model, Rule 1);
    `access_key_id`, `secret_access_key`, `session_token` and `profile` choose the credentials
    (default: the standard AWS chain). Other options: see `HttpProvider`.
    """

    kind = "bedrock"
    config_rules = ConfigRules(
        options=("region", "access_key_id", "secret_access_key", "session_token", "profile", "api"),
        paired=("access_key_id", "secret_access_key"),
        refused_values=(("credential_mode", "passthrough"),),
    )
    wire = BEDROCK_CONVERSE
    vendor = "bedrock"

    @classmethod
    def from_config(cls, config: BedrockFields, build: ProviderBuild) -> Self:
        """The provider `config` describes (region default `us-east-1`)."""
        return cls(
            config.region or "us-east-1",
            base_url=config.base_url,
            name=config.name,
            api=config.api,
            access_key_id=config.access_key_id,
            secret_access_key=config.secret_access_key,
            session_token=config.session_token,
            profile=config.profile,
            options=build.options,
            **build.keywords,
        )

    def __init__(
        self,
        region: str = "us-east-1",
        *,
        base_url: str | None = None,
        name: str = "bedrock",
        api: BedrockApi | None = None,
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        session_token: str | None = None,
        profile: str | None = None,
        options: HttpOptions | None = None,
        **keywords: Unpack[HttpProviderKeywords],
    ) -> None:
        if keywords.get("credential_mode", "org_key") != "org_key":
            rule = "bedrock signs with AWS credentials and takes no caller's key: org_key only"
            raise ConfigError(f"credential_mode: {rule}", [("credential_mode", rule)])
        if api is not None and api not in APIS:
            rule = f"must be one of {', '.join(APIS)} (got {api!r})"
            raise ConfigError(f"api: {rule}", [("api", rule)])
        self.signer = AwsSigner(
            region,
            provider=name,
            access_key_id=access_key_id,
            secret_access_key=secret_access_key,
            session_token=session_token,
            profile=profile,
        )
        self.region = region
        self.api = api
        if api == "invoke":
            self.wire = BEDROCK_INVOKE
        url = base_url or default_base_url(region)
        super().__init__(name=name, base_url=url, api_key=None, options=options, **keywords)
        self._secrets = (*self._secrets, *self.signer.secrets)
        if self.model is not None and self._wire_of(self.model) is BEDROCK_INVOKE:
            self.family = "anthropic"

    @property
    def wire_formats(self) -> frozenset[WireFormat]:
        """Converse, and Anthropic Messages unless `api` forces Converse."""
        if self.api == "converse":
            return frozenset((BEDROCK_CONVERSE.format,))
        if self.api == "invoke":
            return frozenset((BEDROCK_INVOKE.format,))
        return frozenset((BEDROCK_CONVERSE.format, BEDROCK_INVOKE.format))

    def _wire_of(self, model: str) -> Wire:
        """Rule 1."""
        if self.api is not None:
            return BEDROCK_INVOKE if self.api == "invoke" else BEDROCK_CONVERSE
        return BEDROCK_INVOKE if bedrock_anthropic.is_claude(model) else BEDROCK_CONVERSE

    def wire_for(self, request: ChatRequest) -> Wire:
        """The wire of the model `request` asks for (Rule 1)."""
        try:
            return self._wire_of(self.wire_model(request.model))
        except ProviderError:
            return self.wire

    def _url(self, model: str, stream: bool) -> str:
        """Rule 3."""
        invoke = self._wire_of(model) is BEDROCK_INVOKE
        method = ("invoke-with-response-stream" if stream else "invoke") if invoke else None
        method = method or ("converse-stream" if stream else "converse")
        return f"{self.base_url}/model/{quote(model, safe='')}/{method}"

    def chat_url(self, model: str) -> str:
        """`{base_url}/model/{modelId}/converse` (or `/invoke` for Claude models)."""
        return self._url(model, False)

    def stream_url(self, model: str) -> str:
        """`{base_url}/model/{modelId}/converse-stream` (`/invoke-with-response-stream`)."""
        return self._url(model, True)

    def body_for(
        self, request: ChatRequest, model: str, *, stream: bool, wire: Wire | None = None
    ) -> bytes:
        """Rule 2 on the invoke wire; else the request encoded."""
        wire = wire or self._wire_of(model)
        source = request.source
        if wire is BEDROCK_INVOKE and source is not None and source.format == wire.format:
            return bedrock_anthropic.forward_body(source.body, headers=source.headers)
        if request.stream != stream:
            request = dataclasses.replace(request, stream=stream)
        return orjson.dumps(wire.encode(request, model))

    async def _prepare(
        self, request: ChatRequest, *, stream: bool
    ) -> tuple[Wire, str, str, bytes, dict[str, str]]:
        """The wire, model, URL, body and signed headers of one call (base Rule 5)."""
        try:
            model = self.wire_model(request.model)
            wire = self._wire_of(model)
            try:
                body = self.body_for(request, model, stream=stream, wire=wire)
            except UNENCODABLE as exc:
                raise unencodable(self.name, exc) from exc
            url = self._url(model, stream)
            headers = dict(self.sent_headers())
            if stream:
                headers["accept"] = "application/vnd.amazon.eventstream"
            headers.update(await self.signer.sign(url, body, headers["content-type"]))
        except ProviderError:
            raise
        except Exception as exc:
            raise local_error(exc, provider=self.name) from exc
        return wire, model, url, body, headers

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """One whole answer. Failures raise `ProviderError` subclasses."""
        wire, model, url, body, headers = await self._prepare(request, stream=False)
        response = await self._post_answer(url, body, headers, wire.decode)
        response.model = response.model or model
        return response

    async def stream(self, request: ChatRequest) -> AsyncIterator[ChatChunk]:
        """The answer as neutral chunks, read from event-stream frames (Rule 5)."""
        wire, model, url, body, headers = await self._prepare(request, stream=True)
        async with self._transport.stream(url, body, headers) as reply:
            request_id = request_id_of(reply.headers)
            if not 200 <= reply.status < 300:
                self._check_status(reply.status, reply.headers, await reply.read())
            frames = EventStreamDecoder(max_frame_bytes=self.options.max_response_bytes)
            decoder = wire.decoder()
            invoke = wire is BEDROCK_INVOKE
            try:
                async for data in reply.chunks():
                    for frame in frames.feed(data):
                        for chunk in self._frame(decoder, frame, invoke, request_id):
                            if chunk.model is None:
                                chunk.model = model
                            yield chunk
            except EventStreamError as exc:
                error = ProviderUnavailable(
                    f"the event stream is malformed: {exc}",
                    reason="malformed stream",
                    provider=self.name,
                )
                raise self._named(error, request_id) from None
            finally:
                self.malformed_events += decoder.malformed
            check_finished(decoder, self.name, request_id)

    def _frame(
        self, decoder: StreamDecoder, frame: Frame, invoke: bool, request_id: str | None
    ) -> list[ChatChunk]:
        if frame.message_type != "event":
            status, body = bedrock_error(500, {}, frame.payload, kind=frame.event_type)
            error = error_for_status(
                status,
                {},
                orjson.dumps(body),
                provider=self.name,
                vendor=self.vendor,
                secrets=self._call_secrets(),
            )
            raise self._named(error, request_id)
        if invoke:
            if frame.event_type != "chunk":
                return []
            event = bedrock_anthropic.chunk_event(frame.payload)
            if event is None:
                decoder.malformed += 1
                return []
        else:
            text = frame.payload.decode("utf-8", errors="replace")
            event = SSEEvent(frame.event_type, text, None, b"")
        return self._decode(decoder, event, request_id)

    def _check_status(self, status: int, headers: Mapping[str, str], body: bytes) -> None:
        """Rule 6: Bedrock's error type read first, then the common classification."""
        if 200 <= status < 300:
            return
        classed, normal = bedrock_error(status, headers, body)
        super()._check_status(classed, headers, orjson.dumps(normal))

    async def aclose(self) -> None:
        """Close the pooled connections and stop a background credential refresh."""
        await self.signer.aclose()
        await super().aclose()
