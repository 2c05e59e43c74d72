"""The `anthropic` provider kind: Anthropic's Messages API (family anthropic)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson

from turnout.errors import ProviderError
from turnout.providers._prepare import UNENCODABLE, unencodable
from turnout.providers.base import ANTHROPIC_MESSAGES, KeyedProvider
from turnout.providers.transport import local_error, request_id_of

if TYPE_CHECKING:
    from typing import Unpack

    from turnout.providers.base import HttpProviderKeywords
    from turnout.providers.transport import HttpOptions
    from turnout.wire.model import ChatRequest

__all__ = ["ANTHROPIC_VERSION", "Anthropic"]

DEFAULT_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
"""The `anthropic-version` header sent unless the caller's own request carries one."""


class Anthropic(KeyedProvider):
    """Anthropic (`kind: anthropic`).

    `api_key` defaults to the `ANTHROPIC_API_KEY` environment variable; `base_url` to
    `https://api.anthropic.com`; `version` is the `anthropic-version` header (2023-06-01).
    A caller's own Messages request keeps its `anthropic-version` and `anthropic-beta`
    headers (`HttpProvider.call_headers`). A key goes in `x-api-key`; with
    `credential_mode="passthrough"` each call carries the caller's own credential there, or as
    `Authorization: Bearer` when the caller sent it that way (an OAuth token of a Claude
    plan). Other options: see `HttpProvider`.
    """

    kind = "anthropic"
    api_key_env = "ANTHROPIC_API_KEY"
    wire = ANTHROPIC_MESSAGES
    default_base_url = DEFAULT_BASE_URL
    family = "anthropic"
    vendor = "anthropic"
    supports_embeddings = False

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str = DEFAULT_BASE_URL,
        name: str = "anthropic",
        version: str = ANTHROPIC_VERSION,
        options: HttpOptions | None = None,
        **keywords: Unpack[HttpProviderKeywords],
    ) -> None:
        super().__init__(
            api_key,
            base_url=base_url,
            name=name,
            auth_headers={"anthropic-version": version},
            options=options,
            **keywords,
        )

    def credential_headers(self, secret: str, *, bearer: bool = False) -> dict[str, str]:
        """`x-api-key`, or `Authorization: Bearer` for a caller's bearer token."""
        return {"authorization": f"Bearer {secret}"} if bearer else {"x-api-key": secret}

    def chat_url(self, model: str) -> str:
        """`{base_url}/v1/messages`."""
        return f"{self.base_url}/v1/messages"

    def _count_body(self, request: ChatRequest) -> bytes:
        model = self.wire_model(request.model)
        if request.source is not None:
            return self.body_for(request, model, stream=False)
        payload = self.wire.encode(request, model)
        for key in ("max_tokens", "stream", "temperature", "top_p", "stop_sequences"):
            payload.pop(key, None)
        return orjson.dumps(payload)

    async def count_tokens(self, request: ChatRequest) -> int:
        """`POST /v1/messages/count_tokens` for `request`: the upstream's input token count."""
        try:
            try:
                body = self._count_body(request)
            except UNENCODABLE as exc:
                raise unencodable(self.name, exc) from exc
            headers = self.call_headers(request)
        except ProviderError:
            raise
        except Exception as exc:
            raise local_error(exc, provider=self.name) from exc
        url = f"{self.base_url}/v1/messages/count_tokens"
        reply = await self._transport.post(url, body, headers)
        self._check_status(reply.status, reply.headers, reply.body)
        try:
            count = orjson.loads(reply.body).get("input_tokens")
        except (orjson.JSONDecodeError, AttributeError):
            count = None
        if not isinstance(count, int):
            raise ProviderError.for_class(
                "provider_error",
                "unparseable count_tokens answer",
                reason="unparseable body",
                provider=self.name,
                provider_request_id=request_id_of(reply.headers),
            )
        return count
