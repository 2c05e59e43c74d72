"""End to end: every documented error code the gateway's API endpoints produce, as the official SDKs
see them (status, envelope, code) over a real socket."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anthropic
import httpx
import openai
import pytest
import pytest_asyncio

from tests.e2e._gateway import RunningGateway, running_gateway
from turnout.mock_upstream import MockUpstream

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.asyncio(loop_scope="module")

USER: Any = [{"role": "user", "content": "Why is checkout failing?"}]
APP_KEY = "tk_e2e_app_key_1"
NARROW_KEY = "tk_e2e_narrow_key_2"
TOOLS: Any = [{"type": "function", "function": {"name": "lookup", "parameters": {}}}]
# The OpenAI envelope's `type` of the codes that have their own; every other is
# `invalid_request_error`.
TYPES = {
    "UPSTREAM_POOL_EXHAUSTED": "route_exhausted",
    "upstream_unreachable": "route_exhausted",
    "upstream_timeout": "route_exhausted",
    "route_ineligible": "route_ineligible",
}


def _route(name: str, *models: str, **options: Any) -> dict[str, Any]:
    extra = options.pop("target", {})
    targets = [
        {"provider": "openai", "model": model, "name": f"t{i}", **extra}
        for i, model in enumerate(models)
    ]
    return {"name": name, "models": [name], "targets": targets, **options}


def _config(upstream: MockUpstream) -> dict[str, Any]:
    url = upstream.openai_base_url
    return {
        "server": {"auth": "keys", "max_body_bytes": 4096},
        "providers": [
            {"name": "openai", "kind": "openai", "api_key": "sk-e2e", "base_url": url},
            {"name": "anthropic", "kind": "anthropic", "api_key": "k", "base_url": upstream.url},
            # Two providers of one family in no route: their implicit routes tie on gpt-*.
            {"name": "twin-a", "kind": "openai", "api_key": "k1", "base_url": url},
            {"name": "twin-b", "kind": "openai", "api_key": "k2", "base_url": url},
        ],
        "routes": [
            _route("main", "gpt-4o-mini"),
            _route("exhausted", "ex-a/fault:status=503", "ex-b/fault:status=503"),
            _route("unreachable", "un-a/fault:reset", "un-b/fault:reset"),
            _route(
                "slow",
                "sl-a/fault:latency=5",
                "sl-b/fault:latency=5",
                target={"timeout": 0.2},
            ),
            _route("vision", "v", target={"capabilities": ["vision"]}),
            _route("paused", "p", target={"paused": True}),
            {"name": "claude", "models": ["claude-*"], "targets": [{"provider": "anthropic"}]},
        ],
        "keys": [
            {"name": "app", "key": APP_KEY},
            {"name": "narrow", "key": NARROW_KEY, "routes": ["main"]},
        ],
    }


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def gateway() -> AsyncIterator[RunningGateway]:
    async with MockUpstream() as upstream, running_gateway(_config(upstream)) as running:
        yield running


def _openai(gateway: RunningGateway, key: str = APP_KEY) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gateway.openai_base_url, api_key=key, max_retries=0)


async def _openai_error(client: openai.AsyncOpenAI, **create: Any) -> openai.APIStatusError:
    async with client:
        call = (
            client.embeddings.create(**create)
            if "input" in create
            else client.chat.completions.create(messages=USER, **create)
        )
        with pytest.raises(openai.APIStatusError) as caught:
            await call
    return caught.value


@pytest.mark.parametrize(
    ("model", "extra", "status", "code"),
    [
        ("llama-3", {}, 503, "NO_ROUTE"),
        ("gpt-4o", {}, 503, "UPSTREAM_AMBIGUOUS"),
        ("exhausted", {}, 503, "UPSTREAM_POOL_EXHAUSTED"),
        ("unreachable", {}, 502, "upstream_unreachable"),
        ("slow", {}, 504, "upstream_timeout"),
        ("vision", {"tools": TOOLS}, 400, "route_ineligible"),
        ("paused", {}, 503, "no_deployment_available"),
        ("", {}, 403, "model_not_allowed"),
        ("gpt-4o-mini", {"extra_body": {"pad": "x" * 8192}}, 413, "request_too_large"),
        ("gpt-4o-mini", {"messages": "not a list"}, 400, "invalid_request"),
    ],
)
async def test_openai_sdk_sees_each_code(
    gateway: RunningGateway, model: str, extra: dict[str, Any], status: int, code: str
) -> None:
    """The OpenAI SDK raises with the code's status, and the envelope carries the code and the
    type: `route_exhausted`, `route_ineligible`, else `invalid_request_error` (never the
    `server_error` a 5xx would suggest: these are turnout's own errors)."""
    client = _openai(gateway)
    async with client:
        with pytest.raises(openai.APIStatusError) as caught:
            await client.chat.completions.create(model=model, **{"messages": USER, **extra})
    error = caught.value
    assert error.status_code == status
    assert error.code == code
    assert error.type == TYPES.get(code, "invalid_request_error")
    assert error.response.headers["x-request-id"]


async def test_embeddings_of_a_route_without_them(gateway: RunningGateway) -> None:
    """400 `embeddings_not_supported` for a route with no embeddings target."""
    error = await _openai_error(_openai(gateway), model="claude-x", input="hello")
    assert error.status_code == 400
    assert error.code == "embeddings_not_supported"


async def test_unknown_key_is_invalid_api_key(gateway: RunningGateway) -> None:
    """401 `invalid_api_key` for a key the gateway does not know."""
    error = await _openai_error(_openai(gateway, "tk_nobody_knows_me"), model="gpt-4o-mini")
    assert error.status_code == 401
    assert error.code == "invalid_api_key"


async def test_route_outside_the_key_ceiling_is_model_denied(gateway: RunningGateway) -> None:
    """400 `MODEL_DENIED` for a key limited to another route."""
    error = await _openai_error(_openai(gateway, NARROW_KEY), model="exhausted")
    assert error.status_code == 400
    assert error.code == "MODEL_DENIED"


async def test_anthropic_sdk_sees_the_anthropic_envelope(gateway: RunningGateway) -> None:
    """The Anthropic SDK gets `{"type": "error", "error": {type, message, code}}`."""
    client = anthropic.AsyncAnthropic(base_url=gateway.url, api_key=APP_KEY, max_retries=0)
    async with client:
        with pytest.raises(anthropic.APIStatusError) as caught:
            await client.messages.create(model="llama-3", max_tokens=8, messages=USER)
    assert caught.value.status_code == 503
    body: Any = caught.value.body
    assert body["type"] == "error"
    assert body["error"]["type"] == "overloaded_error"
    assert body["error"]["code"] == "NO_ROUTE"


async def test_count_tokens_without_an_anthropic_target_is_404(gateway: RunningGateway) -> None:
    """count_tokens on a route with no Anthropic Messages target: 404, never a fake count."""
    async with httpx.AsyncClient() as client:
        reply = await client.post(
            f"{gateway.url}/v1/messages/count_tokens",
            json={"model": "main", "messages": USER},
            headers={"x-api-key": APP_KEY},
        )
    assert reply.status_code == 404
    assert reply.json()["error"]["type"] == "not_found_error"


async def test_openai_sdk_sends_an_unknown_model_once(gateway: RunningGateway) -> None:
    """With its default retries, the OpenAI SDK sends a request for a model no route serves
    exactly once (`x-should-retry: false` on the 503 `NO_ROUTE`), instead of three times."""
    before = len(gateway.requests)
    client = openai.AsyncOpenAI(base_url=gateway.openai_base_url, api_key=APP_KEY)
    async with client:
        with pytest.raises(openai.APIStatusError) as caught:
            await client.chat.completions.create(model="llama-3", messages=USER)
    assert caught.value.status_code == 503
    assert caught.value.response.headers["x-should-retry"] == "false"
    assert gateway.requests[before:] == [("POST", "/v1/chat/completions")]


async def test_anthropic_sdk_sends_an_unknown_model_once(gateway: RunningGateway) -> None:
    """With its default retries, the Anthropic SDK sends a request for a model no route serves
    exactly once, though a 503 is otherwise one it retries."""
    before = len(gateway.requests)
    client = anthropic.AsyncAnthropic(base_url=gateway.url, api_key=APP_KEY)
    async with client:
        with pytest.raises(anthropic.APIStatusError) as caught:
            await client.messages.create(model="llama-3", max_tokens=8, messages=USER)
    assert caught.value.status_code == 503
    assert gateway.requests[before:] == [("POST", "/v1/messages")]


async def test_both_sdks_get_their_own_request_id_back(gateway: RunningGateway) -> None:
    """A caller's `x-request-id` comes back on an answer (header and routing object) through
    the OpenAI SDK, and on a token count through the Anthropic SDK."""
    trace = {"x-request-id": "checkout-trace-0042"}
    client = _openai(gateway)
    async with client:
        raw = await client.chat.completions.with_raw_response.create(
            model="main", messages=USER, extra_headers=trace
        )
    assert raw.headers["x-request-id"] == "checkout-trace-0042"
    completion: Any = raw.parse()
    assert completion.model_extra["routing"]["request_id"] == "checkout-trace-0042"
    counter = anthropic.AsyncAnthropic(base_url=gateway.url, api_key=APP_KEY, max_retries=0)
    async with counter:
        counted = await counter.messages.with_raw_response.count_tokens(
            model="claude-x", messages=USER, extra_headers=trace
        )
    assert counted.headers["x-request-id"] == "checkout-trace-0042"
    assert (await counted.parse()).input_tokens > 0
