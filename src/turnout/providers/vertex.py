"""The `vertex` provider kind: Google Cloud Vertex AI, Gemini and Claude models (family gemini
or anthropic, by the model's publisher).

Rule 1: the publisher of a call comes from its wire model: `claude-*` is `anthropic`, `gemini-*`
is `google`, anything else the provider's own (`default_publisher`, default `google`); a
`publisher` given explicitly is used for every model. Google's models speak the Gemini codec
(`:generateContent`, `:streamGenerateContent?alt=sse`); Anthropic's speak Anthropic Messages
(`:rawPredict`, `:streamRawPredict`), under
`{base_url}/v1/projects/{project}/locations/{location}/publishers/{publisher}/models/{model}`,
each path segment escaped whole.
Rule 2: the base URL is `https://aiplatform.googleapis.com` for the `global` location, else
`https://{location}-aiplatform.googleapis.com`, unless `base_url` is given.
Rule 3: every call carries `Authorization: Bearer <access token>` and no key; the token is kept
fresh in the background (`turnout.providers._cloud_token`), so a call waits for one only when
none is held. A passthrough provider sends the caller's own bearer token instead.
Rule 4: a Claude body is Anthropic's without `model`, with Vertex's `anthropic_version` and the
caller's `anthropic-beta` header as `anthropic_beta` (`turnout.wire.vertex`); a caller's own
Messages request keeps everything else byte for byte (cache_control, thinking, betas).
Rule 5: errors are read as Google's envelope, with Claude's own errors unwrapped
(`turnout.vendors.vertex_errors`); the access token is scrubbed from every error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Protocol
from urllib.parse import quote

from turnout.errors import ConfigError, ProviderUnavailable
from turnout.providers._cloud_token import CloudToken
from turnout.providers._google_auth import google_credentials, refresh_error
from turnout.providers.base import ANTHROPIC_MESSAGES, GEMINI_GENERATE, HttpProvider
from turnout.providers.settings import ConfigRules, NamedFields
from turnout.routing.clock import LoopClock
from turnout.vendors.vertex_errors import unwrap_vertex_error
from turnout.wire import vertex as vertex_wire

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Mapping
    from typing import Self, Unpack

    from turnout.providers.base import HttpProviderKeywords, Wire
    from turnout.providers.settings import ProviderBuild
    from turnout.providers.transport import HttpOptions
    from turnout.routing.clock import Clock
    from turnout.wire.model import ChatChunk, ChatRequest, ChatResponse, WireFormat

__all__ = [
    "DEFAULT_LOCATION",
    "PUBLISHERS",
    "Publisher",
    "Vertex",
    "VertexFields",
    "publisher_of",
    "vertex_base_url",
]

Publisher = Literal["google", "anthropic"]
PUBLISHERS: tuple[Publisher, ...] = ("google", "anthropic")
DEFAULT_LOCATION = "us-central1"
_WIRES: dict[str, tuple[Wire, str]] = {
    "google": (GEMINI_GENERATE, "gemini"),
    "anthropic": (ANTHROPIC_MESSAGES, "anthropic"),
}
_METHODS = {
    "google": ("generateContent", "streamGenerateContent?alt=sse"),
    "anthropic": ("rawPredict", "streamRawPredict"),
}


def vertex_base_url(location: str) -> str:
    """Rule 2: the public Vertex AI base URL of `location`."""
    if location == "global":
        return "https://aiplatform.googleapis.com"
    return f"https://{location}-aiplatform.googleapis.com"


def publisher_of(model: str) -> Publisher | None:
    """Rule 1: the publisher a model name says (`claude-*`, `gemini-*`), else None."""
    bare = model.rsplit("/", 1)[-1].lower()
    if bare.startswith("claude"):
        return "anthropic"
    if bare.startswith("gemini"):
        return "google"
    return None


class VertexFields(NamedFields, Protocol):
    """What a `vertex` provider reads of its configuration: its Google Cloud project,
    location, credentials and publisher (it takes no `api_key`)."""

    @property
    def project(self) -> str | None: ...

    @property
    def location(self) -> str | None: ...

    @property
    def credentials_file(self) -> str | None: ...

    @property
    def credentials_json(self) -> str | None: ...

    @property
    def publisher(self) -> Publisher | None: ...


class Vertex(HttpProvider):
    """Google Cloud Vertex AI (`kind: vertex`).

    `project` is the Google Cloud project id; `location` the region (default `us-central1`,
    or `global`); credentials come from `credentials_file` (a service-account JSON file),
    `credentials_json` (its text), else application-default credentials, with the
    `cloud-platform` scope, all through the optional `google-auth` library
    (`pip install 'turnout[gcp]'`); `token` replaces them with any blocking fetch returning
    `(access token, expiry in epoch seconds)` (tests, custom credentials). `publisher`
    (`google` or `anthropic`) pins the publisher of every model; without it the model name
    chooses, else `default_publisher` (default `google`), which also gives the provider's own
    `wire_format` and `family` (Rule 1). `base_url` overrides the regional endpoint (Rule 2);
    `clock` times the token refresh (default the event loop's). Other options: see `HttpProvider`.
    """

    kind = "vertex"
    config_rules = ConfigRules(
        options=("project", "location", "credentials_file", "credentials_json", "publisher"),
        required=("project",),
        refused=("api_key",),
        exclusive=("credentials_file", "credentials_json"),
    )
    vendor = "vertex"
    supports_embeddings = False

    @classmethod
    def from_config(cls, config: VertexFields, build: ProviderBuild) -> Self:
        """The provider `config` describes; without a `publisher`, its models' publisher is
        the one of the provider's family (`ProviderBuild.family`). Its token refresh runs on
        the real clock whatever the gateway's: the expiry is Google's."""
        default: Publisher = "anthropic" if build.family == "anthropic" else "google"
        return cls(
            config.project or "",
            config.location or DEFAULT_LOCATION,
            credentials_file=config.credentials_file,
            credentials_json=config.credentials_json,
            publisher=config.publisher,
            default_publisher=default,
            base_url=config.base_url,
            name=config.name,
            options=build.options,
            **build.keywords,
        )

    def __init__(
        self,
        project: str,
        location: str = DEFAULT_LOCATION,
        *,
        credentials_file: str | None = None,
        credentials_json: str | None = None,
        token: Callable[[], tuple[str, float | None]] | None = None,
        publisher: Publisher | None = None,
        default_publisher: Publisher = "google",
        base_url: str | None = None,
        name: str = "vertex",
        clock: Clock | None = None,
        options: HttpOptions | None = None,
        **keywords: Unpack[HttpProviderKeywords],
    ) -> None:
        if not project:
            rule = "a vertex provider needs project (its Google Cloud project id)"
            raise ConfigError(f"project: {rule}", [("project", rule)])
        for field, value in (("publisher", publisher), ("default_publisher", default_publisher)):
            if value is not None and value not in _WIRES:
                rule = f"must be one of {', '.join(PUBLISHERS)} (got {value!r})"
                raise ConfigError(f"{field}: {rule}", [(field, rule)])
        wire, family = _WIRES[publisher or default_publisher]
        super().__init__(
            name=name,
            base_url=base_url or vertex_base_url(location),
            wire=wire,
            family=family,
            options=options,
            **keywords,
        )
        self.project = project
        self.location = location
        self.publisher: Publisher | None = publisher
        self.default_publisher: Publisher = default_publisher
        self._prefix = (
            f"{self.base_url}/v1/projects/{quote(project, safe='')}"
            f"/locations/{quote(location, safe='')}/publishers"
        )
        self._token: CloudToken | None = None
        if not self._needs_credential:
            fetch = token or google_credentials(
                credentials_file=credentials_file, credentials_json=credentials_json
            )
            self._token = CloudToken(
                fetch,
                clock=clock or LoopClock(),
                fail=lambda exc: refresh_error(exc, provider=name),
                name=name,
            )

    @property
    def access_token(self) -> CloudToken | None:
        """The refreshing access token (None for a passthrough provider)."""
        return self._token

    @property
    def wire_formats(self) -> frozenset[WireFormat]:
        """The pinned publisher's wire format, else both (each model picks its own, Rule 1)."""
        if self.publisher is not None:
            return frozenset((_WIRES[self.publisher][0].format,))
        return frozenset(wire.format for wire, _ in _WIRES.values())

    def publisher_for(self, model: str) -> Publisher:
        """Rule 1: the publisher serving `model` (a wire model)."""
        return self.publisher or publisher_of(model) or self.default_publisher

    def wire_for(self, request: ChatRequest) -> Wire:
        """The wire of the model's publisher (Rule 1)."""
        return _WIRES[self.publisher_for(self.wire_model(request.model))][0]

    def _model_url(self, model: str, *, stream: bool) -> str:
        publisher = self.publisher_for(model)
        name = quote(model.removeprefix("models/"), safe="")
        method = _METHODS[publisher][1 if stream else 0]
        return f"{self._prefix}/{publisher}/models/{name}:{method}"

    def chat_url(self, model: str) -> str:
        """`…/publishers/{publisher}/models/{model}:generateContent` (or `:rawPredict`)."""
        return self._model_url(model, stream=False)

    def stream_url(self, model: str) -> str:
        """`…:streamGenerateContent?alt=sse` (or `:streamRawPredict`)."""
        return self._model_url(model, stream=True)

    def sent_headers(self) -> Mapping[str, str]:
        """Rule 3: the headers with the held access token (a passthrough provider: the
        caller's)."""
        if self._token is None:
            return super().sent_headers()
        token = self._token.current()
        if token is None:
            raise ProviderUnavailable(
                f'provider "{self.name}" holds no valid access token',
                reason="no access token",
                provider=self.name,
            )
        return {**self._headers, "authorization": f"Bearer {token}"}

    def call_headers(self, request: ChatRequest) -> Mapping[str, str]:
        """The provider's headers only: Vertex takes Anthropic's version and betas in the body
        (Rule 4)."""
        return self.sent_headers()

    def body_for(
        self, request: ChatRequest, model: str, *, stream: bool, wire: Wire | None = None
    ) -> bytes:
        """Rule 4: the body in the publisher's format, with Vertex's differences."""
        wire = wire or self.wire_for(request)
        body = super().body_for(request, model, stream=stream, wire=wire)
        if wire.format == "anthropic-messages":
            return vertex_wire.raw_predict_body(body, betas=_betas(request))
        return vertex_wire.gemini_body(body)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """One whole answer (waits for an access token only when none is held)."""
        if self._token is not None:
            await self._token.ready()
        return await super().complete(request)

    async def stream(self, request: ChatRequest) -> AsyncIterator[ChatChunk]:
        """The answer as neutral chunks (waits for an access token only when none is held)."""
        if self._token is not None:
            await self._token.ready()
        async for chunk in super().stream(request):
            yield chunk

    def _check_status(self, status: int, headers: Mapping[str, str], body: bytes) -> None:
        """Rule 5: Claude's wrapped errors unwrapped before they are classified."""
        if status >= 400:
            body = unwrap_vertex_error(body)
        super()._check_status(status, headers, body)

    def _call_secrets(self) -> tuple[str, ...]:
        """Rule 5: the access token too."""
        secrets = super()._call_secrets()
        token = None if self._token is None else self._token.current()
        return secrets if token is None else (*secrets, token)

    async def aclose(self) -> None:
        """Stop the token refresher and close the pooled connections."""
        if self._token is not None:
            await self._token.aclose()
        await super().aclose()


def _betas(request: ChatRequest) -> list[str]:
    """The `anthropic-beta` header values of a caller's own Messages request."""
    source = request.source
    if source is None or source.format != "anthropic-messages":
        return []
    return [value for key, value in source.headers if key.lower() == "anthropic-beta"]
