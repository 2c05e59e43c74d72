"""The `azure-openai` provider kind: Azure deployments, speaking the wire format named by `wire`
(`openai-chat`, family openai, or `anthropic-messages`, family anthropic)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Protocol
from urllib.parse import quote, urlencode

from turnout.errors import ConfigError
from turnout.providers.anthropic import ANTHROPIC_VERSION
from turnout.providers.base import (
    ANTHROPIC_MESSAGES,
    OPENAI_CHAT,
    EmbeddingsSupport,
    ResponsesSupport,
)
from turnout.providers.settings import ConfigRules, KeyedFields

if TYPE_CHECKING:
    from typing import Self, Unpack

    from turnout.providers.base import HttpProviderKeywords
    from turnout.providers.settings import ProviderBuild
    from turnout.providers.transport import HttpOptions

__all__ = ["DEFAULT_API_VERSION", "AzureFields", "AzureOpenAI"]

DEFAULT_API_VERSION = "2024-10-21"
"""The Azure OpenAI `api-version` used when none is given."""

_WIRES = {
    "openai-chat": (OPENAI_CHAT, "openai"),
    "anthropic-messages": (ANTHROPIC_MESSAGES, "anthropic"),
}


class AzureFields(KeyedFields, Protocol):
    """What an `azure-openai` provider reads of its configuration besides its key and URL."""

    @property
    def api_version(self) -> str | None: ...

    @property
    def wire(self) -> Literal["openai-chat", "anthropic-messages"] | None: ...


class AzureOpenAI(EmbeddingsSupport, ResponsesSupport):
    """Azure (`kind: azure-openai`).

    `base_url` is the resource endpoint (`https://NAME.openai.azure.com`; for
    `wire="anthropic-messages"` the Anthropic endpoint, e.g.
    `https://NAME.services.ai.azure.com/anthropic`); `api_key` goes in `api-key` (`x-api-key`
    for the Anthropic wire); `api_version` is the query parameter of OpenAI-wire calls (default
    2024-10-21); `wire` is required: `openai-chat` or `anthropic-messages`. The model a target
    asks for is the deployment name: `{base_url}/openai/deployments/{model}/chat/completions`.
    Embeddings and OpenAI's Responses API (a caller's own Responses request, forwarded to
    `{base_url}/openai/v1/responses`) only on the OpenAI wire. With
    `credential_mode="passthrough"` each call carries the caller's own credential in that same
    header (on the Anthropic wire, as `Authorization: Bearer` when the caller sent a bearer
    token). Other options: see
    `HttpProvider`.
    """

    kind = "azure-openai"
    config_rules = ConfigRules(options=("wire", "api_version"), required=("wire", "base_url"))

    @classmethod
    def from_config(cls, config: AzureFields, build: ProviderBuild) -> Self:
        """The provider `config` describes (its `base_url` and `wire` are required)."""
        return cls(
            config.base_url or "",
            config.api_key or None,
            config.api_version or DEFAULT_API_VERSION,
            wire=config.wire or "",
            name=config.name,
            options=build.options,
            **build.keywords,
        )

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        api_version: str = DEFAULT_API_VERSION,
        *,
        wire: str,
        name: str = "azure-openai",
        options: HttpOptions | None = None,
        **keywords: Unpack[HttpProviderKeywords],
    ) -> None:
        if wire not in _WIRES:
            raise ConfigError(f"wire: must be one of {', '.join(_WIRES)} (got {wire!r})")
        codec, family = _WIRES[wire]
        anthropic = wire == "anthropic-messages"
        auth: dict[str, str] = {"anthropic-version": ANTHROPIC_VERSION} if anthropic else {}
        self.api_version = api_version
        self.supports_embeddings = not anthropic
        self.supports_responses = not anthropic
        super().__init__(
            name=name,
            base_url=base_url,
            wire=codec,
            family=family,
            vendor="anthropic" if anthropic else "azure-openai",
            auth_headers=auth,
            api_key=api_key,
            options=options,
            **keywords,
        )

    def credential_headers(self, secret: str, *, bearer: bool = False) -> dict[str, str]:
        """`api-key` on the OpenAI wire; `x-api-key` (or `Authorization: Bearer` for a
        caller's bearer token) on the Anthropic wire."""
        if self.wire.format == "anthropic-messages":
            return {"authorization": f"Bearer {secret}"} if bearer else {"x-api-key": secret}
        return {"api-key": secret}

    def chat_url(self, model: str) -> str:
        """The deployment's chat URL (OpenAI wire) or `{base_url}/v1/messages`."""
        if self.wire.format == "anthropic-messages":
            return f"{self.base_url}/v1/messages"
        return self._deployment_url(model, "chat/completions")

    def responses_url(self, model: str) -> str:
        """`{base_url}/openai/v1/responses` (Azure's v1 API: the deployment is the body's
        `model`, and no `api-version` is asked)."""
        return f"{self.base_url}/openai/v1/responses"

    def embeddings_url(self, model: str) -> str:
        """The deployment's embeddings URL."""
        return self._deployment_url(model, "embeddings")

    def _deployment_url(self, model: str, endpoint: str) -> str:
        deployment = quote(model, safe="")
        query = urlencode({"api-version": self.api_version})
        return f"{self.base_url}/openai/deployments/{deployment}/{endpoint}?{query}"
