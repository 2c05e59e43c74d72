"""The response cache through the gateway app in process: hits make no
call and cost 0, whole or streamed as the caller asks; only finished answers are stored; the
key ignores `stream` and the client format but not the model or the parameters; hits come
only after the key, ceiling and grant checks."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import orjson
import pytest

from tests.gateway._app_support import (
    anthropic_text,
    chat,
    client_of,
    messages,
    mock_provider,
    openai_text,
    sse_events,
)
from turnout.access.keys import Caller
from turnout.config.load import parse_config
from turnout.errors import StreamBroken
from turnout.gateway.resolution.cache import ChatCache, hit_record
from turnout.gateway.resolution.lookups import build_runtime, chat_cache
from turnout.gateway.server.app import GatewayApp
from turnout.routing.clock import FakeClock
from turnout.routing.stream import RoutedStream
from turnout.state.cache import CachedAnswer, ResponseCache
from turnout.state.memory import MemoryState
from turnout.wire.model import ChatChunk, ChatRequest, Message, TextPart, Usage

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

    import httpx

    from turnout.gateway.resolution.cache import CacheVisit
    from turnout.gateway.runtime.live import Runtime
    from turnout.providers.mock import MockProvider

FULL_KEY = "tk_full_key_0001"
USAGE_ONLY_KEY = "tk_usage_only_01"
OTHER_ROUTE_KEY = "tk_other_route_1"
OUTSIDER_KEY = "tk_outsider_0001"
SALES_KEY = "tk_sales_key_001"
PLATFORM_KEY = "tk_platform_0001"


def _route(name: str, provider: str, *models: str, **options: Any) -> dict[str, Any]:
    targets = [
        {"provider": provider, "model": model, "name": f"t{i}"} for i, model in enumerate(models)
    ]
    return {"name": name, "models": [name], "targets": targets, **options}


CACHE = {"enabled": True, "ttl_seconds": 60}
CONFIG: dict[str, Any] = {
    "server": {"auth": "keys"},
    "providers": [
        mock_provider("oa"),
        mock_provider("an", wire="anthropic-messages"),
        mock_provider("bedrock", wire="anthropic-messages"),
    ],
    "routes": [
        {**_route("cached", "oa", "gpt-4o-mini", cache=CACHE), "models": ["cached", "cached-*"]},
        _route("uncached", "oa", "gpt-4o-mini"),
        _route("claude-cached", "an", "claude-x", cache=CACHE),
        _route("errors", "oa", "err/fault:status=500|ok", cache=CACHE),
        _route("refusing", "oa", "refuse/fault:refuse", cache=CACHE, fail_over_on_refusal=False),
        _route("refusing-ant", "an", "refx/fault:refuse", cache=CACHE, fail_over_on_refusal=False),
        _route("cut", "oa", "cut/fault:cut=2", cache=CACHE),
        _route("unfinished", "oa", "unf/fault:end=2", cache=CACHE),
        {
            "name": "claude",
            "models": ["claude-*"],
            "targets": [{"provider": "an", "name": "direct"}],
            "cache": CACHE,
        },
        {
            "name": "claude-bedrock",
            "models": ["claude*"],
            "targets": [{"provider": "bedrock", "name": "bedrock"}],
            "cache": CACHE,
        },
        {
            "name": "embed",
            "models": ["text-embedding-*"],
            "targets": [{"provider": "oa", "name": "emb"}],
            "cache": CACHE,
        },
    ],
    "keys": [
        {"name": "full", "key": FULL_KEY, "teams": ["eng"]},
        {"name": "usage-only", "key": USAGE_ONLY_KEY, "teams": ["eng"], "recording": "usage_only"},
        {"name": "other-route", "key": OTHER_ROUTE_KEY, "teams": ["eng"], "routes": ["uncached"]},
        {"name": "outsider", "key": OUTSIDER_KEY, "teams": ["visitors"]},
        {"name": "sales", "key": SALES_KEY, "teams": ["eng", "sales"]},
        {"name": "platform", "key": PLATFORM_KEY, "teams": ["eng", "platform"]},
    ],
    "bindings": [
        {
            "name": "eng-everything",
            "subjects": [{"team": "eng"}],
            "grants": [{"models": "*"}],
        },
        {
            "name": "platform-bedrock",
            "subjects": [{"team": "platform"}],
            "grants": [{"models": "claude*", "route": "claude-bedrock"}],
        },
        {
            "name": "no-opus-for-sales",
            "mode": "deny",
            "subjects": [{"team": "sales"}],
            "grants": [{"models": "claude-opus*"}],
        },
    ],
}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def runtime(clock: FakeClock) -> Runtime:
    return build_runtime(parse_config(CONFIG, env={}), clock=clock)


class _Gateway:
    """Posts to an in-process app on the fake clock."""

    def __init__(self, runtime: Runtime, clock: FakeClock) -> None:
        self.runtime = runtime
        self.clock = clock
        self.app = GatewayApp(runtime)

    async def post(self, path: str, body: Any, key: str = FULL_KEY) -> httpx.Response:
        async with client_of(self.app) as client:
            headers = {"authorization": f"Bearer {key}"}
            return await self.clock.run(client.post(path, json=body, headers=headers))

    async def chat(self, body: Any, key: str = FULL_KEY) -> httpx.Response:
        return await self.post("/v1/chat/completions", body, key)

    async def messages(self, body: Any, key: str = FULL_KEY) -> httpx.Response:
        return await self.post("/v1/messages", body, key)

    def calls(self, provider: str = "oa") -> int:
        mock: MockProvider = self.runtime.providers[provider]
        return sum(1 for entry in mock.requests if not entry.path.endswith("embeddings"))

    def embeddings_calls(self) -> int:
        mock: MockProvider = self.runtime.providers["oa"]
        return sum(1 for entry in mock.requests if entry.path.endswith("embeddings"))


@pytest.fixture
def gw(runtime: Runtime, clock: FakeClock) -> _Gateway:
    return _Gateway(runtime, clock)


def _usage_event(text: str) -> dict[str, Any] | None:
    for _, data in sse_events(text):
        if data != "[DONE]":
            obj = orjson.loads(data)
            if obj.get("usage") and not obj.get("choices"):
                usage: dict[str, Any] = obj["usage"]
                return usage
    return None


# -- hits and misses


async def test_second_identical_request_is_a_hit_without_an_upstream_call(gw: _Gateway) -> None:
    """The first request is a miss that is stored; the same request again is answered from the
    cache: no call, `x-turnout-cache: hit`, `x-turnout-cost: 0`, the same answer."""
    first = await gw.chat(chat("cached"))
    second = await gw.chat(chat("cached"))
    assert (first.status_code, second.status_code) == (200, 200)
    assert gw.calls() == 1
    assert first.headers["x-turnout-cache"] == "miss"
    assert second.headers["x-turnout-cache"] == "hit"
    assert second.headers["x-turnout-cost"] == "0"
    assert second.headers["x-turnout-model"] == first.headers["x-turnout-model"]
    assert "x-turnout-target" not in second.headers
    assert "x-turnout-attempts" not in second.headers
    one, two = first.json(), second.json()
    assert two["choices"][0]["message"] == one["choices"][0]["message"]
    assert two["choices"][0]["finish_reason"] == "stop"
    for field in ("prompt_tokens", "completion_tokens", "total_tokens"):
        assert two["usage"][field] == one["usage"][field]
    assert two["model"] == one["model"]
    assert one["routing"]["cache"] == "miss"
    assert two["routing"]["cache"] == "hit"
    assert two["routing"]["attempts"] == []
    assert two["routing"]["route"] == "cached"
    assert two["routing"]["request_id"] != one["routing"]["request_id"]
    assert two["id"] != one["id"]


async def test_route_without_a_cache_calls_every_time_and_has_no_cache_field(
    gw: _Gateway,
) -> None:
    """A route without `cache.enabled` never reads or writes the cache; its record's `cache`
    stays absent and no `x-turnout-cache` header is sent, whole or streamed."""
    first = await gw.chat(chat("uncached"))
    second = await gw.chat(chat("uncached"))
    streamed = await gw.chat({**chat("uncached"), "stream": True})
    assert gw.calls() == 3
    assert "x-turnout-cache" not in first.headers
    assert "x-turnout-cache" not in second.headers
    assert "x-turnout-cache" not in streamed.headers
    assert "cache" not in second.json()["routing"]
    assert first.json()["routing"]["attempts"] != []


async def test_hit_is_streamed_to_a_streaming_caller(gw: _Gateway) -> None:
    """An answer stored from a whole response goes to a streaming OpenAI caller as chunks,
    a finish chunk, the usage chunk it asked for, and `[DONE]`, without a call."""
    whole = await gw.chat(chat("cached"))
    streamed = await gw.chat(chat("cached", stream=True, stream_options={"include_usage": True}))
    assert gw.calls() == 1
    assert streamed.status_code == 200
    assert streamed.headers["content-type"].startswith("text/event-stream")
    assert streamed.headers["x-turnout-cache"] == "hit"
    assert openai_text(streamed.text) == whole.json()["choices"][0]["message"]["content"]
    events = sse_events(streamed.text)
    assert events[-1] == (None, "[DONE]")
    finishes = [
        choice["finish_reason"]
        for _, data in events[:-1]
        for choice in orjson.loads(data)["choices"]
        if choice["finish_reason"] is not None
    ]
    assert finishes == ["stop"]
    usage = _usage_event(streamed.text)
    assert usage is not None
    assert usage["prompt_tokens"] == whole.json()["usage"]["prompt_tokens"]
    assert usage["completion_tokens"] == whole.json()["usage"]["completion_tokens"]


async def test_streamed_hit_leaves_out_usage_unless_asked(gw: _Gateway) -> None:
    """Without `stream_options.include_usage` a streamed hit has no usage chunk."""
    await gw.chat(chat("cached"))
    streamed = await gw.chat(chat("cached", stream=True))
    assert streamed.headers["x-turnout-cache"] == "hit"
    assert _usage_event(streamed.text) is None
    assert sse_events(streamed.text)[-1] == (None, "[DONE]")


async def test_answer_first_streamed_is_a_whole_hit_for_a_whole_caller(gw: _Gateway) -> None:
    """A stream that ended cleanly is stored; a non-streaming caller of the same request gets
    it as one whole answer, with the usage the stream reported."""
    streamed = await gw.chat(chat("cached", stream=True, stream_options={"include_usage": True}))
    assert streamed.headers["x-turnout-cache"] == "miss"
    whole = await gw.chat(chat("cached"))
    assert gw.calls() == 1
    assert whole.headers["x-turnout-cache"] == "hit"
    body = whole.json()
    usage = _usage_event(streamed.text)
    assert usage is not None
    assert body["choices"][0]["message"]["content"] == openai_text(streamed.text)
    assert body["usage"]["completion_tokens"] == usage["completion_tokens"]
    assert body["model"] == streamed.headers["x-turnout-model"]


async def test_anthropic_streaming_caller_gets_the_event_sequence(gw: _Gateway) -> None:
    """A streamed hit for an Anthropic caller is the Messages event sequence, ending with
    `message_delta` (stop reason, usage) and `message_stop`."""
    first = await gw.messages(messages("claude-cached"))
    hit = await gw.messages(messages("claude-cached", stream=True))
    assert gw.calls("an") == 1
    assert hit.headers["x-turnout-cache"] == "hit"
    names = [name for name, _ in sse_events(hit.text)]
    assert names[0] == "message_start"
    assert names[-2:] == ["message_delta", "message_stop"]
    assert "content_block_start" in names
    assert "content_block_stop" in names
    assert anthropic_text(hit.text) == first.json()["content"][0]["text"]
    delta = orjson.loads(sse_events(hit.text)[-2][1])
    assert delta["delta"]["stop_reason"] == "end_turn"
    assert delta["usage"]["output_tokens"] == first.json()["usage"]["output_tokens"]


async def test_one_entry_serves_both_client_formats(gw: _Gateway) -> None:
    """The key leaves the client format out: an answer cached for an OpenAI caller is a hit
    for an Anthropic caller asking the same (same max_tokens), in Anthropic's shape."""
    first = await gw.chat(chat("claude-cached", max_tokens=64))
    hit = await gw.messages(messages("claude-cached"))
    assert gw.calls("an") == 1
    assert hit.headers["x-turnout-cache"] == "hit"
    body = hit.json()
    assert body["type"] == "message"
    assert body["id"].startswith("msg_")
    assert body["content"][0]["text"] == first.json()["choices"][0]["message"]["content"]
    assert body["stop_reason"] == "end_turn"
    assert body["routing"]["cache"] == "hit"


@pytest.mark.parametrize(
    "change",
    [
        {"temperature": 0.5},
        {"max_tokens": 10},
        {"model": "cached-other"},
        {"messages": [{"role": "user", "content": "Something else?"}]},
        {"seed": 7},
    ],
)
async def test_model_and_parameters_are_in_the_key(gw: _Gateway, change: dict[str, Any]) -> None:
    """A different model, temperature, max_tokens, seed or message is another question: a
    miss that calls upstream."""
    await gw.chat(chat("cached", temperature=0.2, max_tokens=100))
    other = await gw.chat({**chat("cached", temperature=0.2, max_tokens=100), **change})
    assert other.status_code == 200
    assert other.headers["x-turnout-cache"] == "miss"
    assert gw.calls() == 2


async def test_stream_flag_and_delivery_options_are_not_in_the_key(gw: _Gateway) -> None:
    """`stream`, `stream_options` and `user` do not make another question."""
    await gw.chat(chat("cached", temperature=1))
    again = await gw.chat(
        chat("cached", temperature=1.0, stream=True, stream_options={"include_usage": True})
    )
    assert again.headers["x-turnout-cache"] == "hit"
    assert gw.calls() == 1


async def test_entry_expires_after_the_route_ttl(gw: _Gateway, clock: FakeClock) -> None:
    """`ttl_seconds: 60`: a hit at 59 s, a miss (and a call) after 60 s."""
    await gw.chat(chat("cached"))
    clock.advance(59)
    assert (await gw.chat(chat("cached"))).headers["x-turnout-cache"] == "hit"
    clock.advance(1.5)
    late = await gw.chat(chat("cached"))
    assert late.headers["x-turnout-cache"] == "miss"
    assert gw.calls() == 2


# -- what is never stored


async def test_usage_only_key_reads_but_never_writes(gw: _Gateway) -> None:
    """A `usage_only` key's answers are not stored, but it is served what a full key stored."""
    await gw.chat(chat("cached"), key=USAGE_ONLY_KEY)
    second = await gw.chat(chat("cached"), key=USAGE_ONLY_KEY)
    assert second.headers["x-turnout-cache"] == "miss"
    assert gw.calls() == 2
    await gw.chat(chat("cached", stream=True), key=USAGE_ONLY_KEY)
    assert (await gw.chat(chat("cached"), key=USAGE_ONLY_KEY)).headers["x-turnout-cache"] == "miss"
    assert gw.calls() == 4
    await gw.chat(chat("cached"), key=FULL_KEY)
    read = await gw.chat(chat("cached"), key=USAGE_ONLY_KEY)
    assert read.headers["x-turnout-cache"] == "hit"
    assert gw.calls() == 5


async def test_errors_are_never_stored(gw: _Gateway) -> None:
    """A failed request stores nothing: the next one calls upstream (and its answer is what
    is stored)."""
    failed = await gw.chat(chat("errors"))
    assert failed.status_code == 500
    assert failed.headers["x-turnout-cache"] == "miss"
    served = await gw.chat(chat("errors"))
    assert served.status_code == 200
    assert served.headers["x-turnout-cache"] == "miss"
    assert (await gw.chat(chat("errors"))).headers["x-turnout-cache"] == "hit"
    assert gw.calls() == 2


@pytest.mark.parametrize("stream", [False, True])
async def test_endings_are_never_stored(gw: _Gateway, stream: bool) -> None:
    """A refusal handed to the caller (`fail_over_on_refusal: false`) is not stored, whole or
    streamed."""
    body = chat("refusing", stream=stream)
    first = await gw.chat(body)
    second = await gw.chat(body)
    assert (first.status_code, second.status_code) == (200, 200)
    assert second.headers["x-turnout-cache"] == "miss"
    assert gw.calls() == 2


async def test_anthropic_endings_are_never_stored(gw: _Gateway) -> None:
    """An Anthropic `refusal` stop reason is not stored either."""
    first = await gw.messages(messages("refusing-ant"))
    assert first.json()["stop_reason"] == "refusal"
    await gw.messages(messages("refusing-ant"))
    assert gw.calls("an") == 2


@pytest.mark.parametrize("route", ["cut", "unfinished"])
async def test_unfinished_streams_are_never_stored(gw: _Gateway, route: str) -> None:
    """A stream cut after its first tokens, or ended without a finish reason, is not stored:
    the next request calls again."""
    broken = await gw.chat(chat(route, stream=True))
    assert broken.status_code == 200
    assert "stream_broken" in broken.text
    again = await gw.chat(chat(route))
    assert again.headers["x-turnout-cache"] == "miss"
    assert gw.calls() == 2


async def test_embeddings_are_never_cached(gw: _Gateway) -> None:
    """Embeddings on a route with a cache still call every time."""
    body = {"model": "text-embedding-3-small", "input": "hello"}
    first = await gw.post("/v1/embeddings", body)
    second = await gw.post("/v1/embeddings", body)
    assert (first.status_code, second.status_code) == (200, 200)
    assert gw.embeddings_calls() == 2


# -- checks before the cache


async def test_key_ceiling_is_checked_before_a_hit(gw: _Gateway) -> None:
    """A key limited to another route gets 400 MODEL_DENIED, not the cached answer."""
    await gw.chat(chat("cached"))
    denied = await gw.chat(chat("cached"), key=OTHER_ROUTE_KEY)
    assert denied.status_code == 400
    assert denied.json()["error"]["code"] == "MODEL_DENIED"
    assert gw.calls() == 1


@pytest.mark.parametrize(
    ("key", "model", "status", "code"),
    [
        (OUTSIDER_KEY, "claude-sonnet-4-5", 400, "MODEL_DENIED"),
        (SALES_KEY, "claude-opus-4", 403, "POLICY_DENIED"),
    ],
)
async def test_grant_check_is_done_before_a_hit(
    gw: _Gateway, key: str, model: str, status: int, code: str
) -> None:
    """A caller without a grant (400) or under a deny binding (403) gets its error even
    though the answer is cached, in the endpoint's envelope."""
    stored = await gw.messages(messages(model))
    assert stored.status_code == 200
    assert (await gw.messages(messages(model))).headers["x-turnout-cache"] == "hit"
    denied = await gw.messages(messages(model), key=key)
    assert denied.status_code == status
    assert denied.json()["error"]["code"] == code
    assert denied.json()["type"] == "error"
    assert gw.calls("an") == 1


async def test_grant_steering_to_another_route_uses_that_routes_entries(gw: _Gateway) -> None:
    """The route is in the key: a team steered to claude-bedrock misses what `claude` stored,
    and its own answer is served from its own entry."""
    await gw.messages(messages("claude-sonnet-4-5"))
    steered = await gw.messages(messages("claude-sonnet-4-5"), key=PLATFORM_KEY)
    assert steered.headers["x-turnout-route"] == "claude-bedrock"
    assert steered.headers["x-turnout-cache"] == "miss"
    again = await gw.messages(messages("claude-sonnet-4-5"), key=PLATFORM_KEY)
    assert again.headers["x-turnout-cache"] == "hit"
    assert (gw.calls("an"), gw.calls("bedrock")) == (1, 1)


# -- a failing store


class _BrokenState(MemoryState):
    """A store whose reads and writes raise (a backend bug, not an outage it absorbs)."""

    def __init__(self) -> None:
        super().__init__()
        self.broken = True

    async def get(self, key: str) -> bytes | None:
        if self.broken:
            raise RuntimeError("store is broken")
        return await super().get(key)

    async def set(self, key: str, value: bytes, ttl: float) -> None:
        if self.broken:
            raise RuntimeError("store is broken")
        await super().set(key, value, ttl)


async def test_raising_store_is_a_miss_logged_once_until_it_works(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Reads and writes that raise are a miss and a skipped write, never an error; the first
    failure is a warning, the repeats are not, and a failure after recovery warns again."""
    state = _BrokenState()
    cache = ChatCache(ResponseCache(state))
    answer = CachedAnswer(content=(TextPart("hi"),))
    with caplog.at_level(logging.DEBUG, logger="turnout.gateway.resolution.cache"):
        assert await cache.get("k") is None
        assert await cache.put("k", answer, 60) is False
        assert await cache.get("k") is None
        state.broken = False
        assert await cache.put("k", answer, 60) is True
        stored = await cache.get("k")
        assert stored is not None
        assert stored.text == "hi"
        state.broken = True
        assert await cache.get("k") is None
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert all("response cache" in r.getMessage() for r in warnings)


async def test_raising_store_never_fails_a_request(
    gw: _Gateway, caplog: pytest.LogCaptureFixture
) -> None:
    """With a store that raises, requests are served by the route (whole and streamed), the
    cache is a miss every time, and one warning is logged for all of them."""
    chat_cache(gw.runtime).responses.state = _BrokenState()
    with caplog.at_level(logging.WARNING, logger="turnout.gateway.resolution.cache"):
        replies = [
            await gw.chat(chat("cached")),
            await gw.chat(chat("cached", stream=True)),
            await gw.chat(chat("cached")),
        ]
    assert [reply.status_code for reply in replies] == [200, 200, 200]
    assert [reply.headers["x-turnout-cache"] for reply in replies] == ["miss"] * 3
    assert openai_text(replies[1].text) == "mock answer from gpt-4o-mini"
    assert gw.calls() == 3
    assert len(caplog.records) == 1


async def test_unreachable_shared_state_never_fails_a_call() -> None:
    """`state: redis://…` that does not answer: requests are served (the store degrades to
    local state), and the cache still works on it."""
    config = {**CONFIG, "state": "redis://127.0.0.1:1/0"}
    runtime = build_runtime(parse_config(config, env={}))
    app = GatewayApp(runtime)
    try:
        async with client_of(app) as client:
            headers = {"authorization": f"Bearer {FULL_KEY}"}
            first = await client.post("/v1/chat/completions", json=chat("cached"), headers=headers)
            second = await client.post("/v1/chat/completions", json=chat("cached"), headers=headers)
        assert (first.status_code, second.status_code) == (200, 200)
        assert second.headers["x-turnout-cache"] == "hit"
        assert runtime.state.healthy is False
    finally:
        await runtime.aclose()


def test_wire_models_follow_target_models_and_provider_aliases() -> None:
    """The key's wire models: a target's own model wins over the request's; a target without
    one sends the requested model through its provider's `model_aliases`."""
    config = {
        "server": {"auth": "open"},
        "providers": [
            mock_provider("oa", model_aliases={"fast": "gpt-4o-mini-2024"}),
        ],
        "routes": [
            {
                "name": "r",
                "models": ["fast"],
                "targets": [
                    {"provider": "oa", "model": "pinned", "name": "a"},
                    {"provider": "oa", "name": "b"},
                ],
                "cache": CACHE,
            }
        ],
    }
    runtime = build_runtime(parse_config(config, env={}))
    route = runtime.routes["r"].route
    assert chat_cache(runtime).wire_models(route, "fast") == ("pinned", "gpt-4o-mini-2024")
    assert chat_cache(runtime).wire_models(route, "other") == ("pinned", "other")


# -- the stream tap


def _chunks(*, then: BaseException | None = None) -> AsyncGenerator[ChatChunk, None]:
    async def chunks() -> AsyncGenerator[ChatChunk, None]:
        yield ChatChunk(delta="Hello", model="m")
        yield ChatChunk(delta=" there", finish_reason="stop", usage=Usage(3, 2))
        if then is not None:
            raise then

    return chunks()


async def _visit(runtime: Runtime) -> CacheVisit:
    caller = Caller.from_config(runtime.config.keys[0], runtime.project)
    resolution = runtime.resolve("cached", endpoint="chat", caller=caller)
    request = ChatRequest(messages=[Message("user", [TextPart("Hi")])], model="cached")
    return await chat_cache(runtime).look_up(resolution, request, caller)


async def test_tap_stores_a_stream_the_route_ended(runtime: Runtime) -> None:
    """A stream read to its end is stored as its text, finish reason, usage and model."""
    visit = await _visit(runtime)
    record = hit_record(visit.resolution, CachedAnswer())
    tapped = visit.tap(RoutedStream(record, _chunks()))
    assert [chunk.delta async for chunk in tapped] == ["Hello", " there"]
    stored = await chat_cache(runtime).get(visit.key)
    assert stored is not None
    assert (stored.text, stored.finish_reason, stored.usage, stored.model) == (
        "Hello there",
        "stop",
        Usage(3, 2),
        "m",
    )
    assert record.cache == "miss"


async def test_tap_stores_nothing_when_the_stream_fails_after_its_finish(
    runtime: Runtime,
) -> None:
    """A stream that raises after a finished-looking chunk (broken, refused or rejected at
    its end) is not stored."""
    visit = await _visit(runtime)
    record = hit_record(visit.resolution, CachedAnswer())
    tapped = visit.tap(RoutedStream(record, _chunks(then=StreamBroken("cut", routing=record))))
    with pytest.raises(StreamBroken):
        async for _ in tapped:
            pass
    assert await chat_cache(runtime).get(visit.key) is None


async def test_tap_stores_nothing_for_an_abandoned_stream(runtime: Runtime) -> None:
    """A stream closed before its end (the caller left) is not stored, and closing the tap
    closes the route's stream."""
    visit = await _visit(runtime)
    record = hit_record(visit.resolution, CachedAnswer())
    inner = RoutedStream(record, _chunks())
    tapped = visit.tap(inner)
    await anext(tapped)
    await anext(tapped)
    await tapped.aclose()
    assert await chat_cache(runtime).get(visit.key) is None
    with pytest.raises(StopAsyncIteration):
        await anext(inner)
