"""The request id through the gateway app: a caller's `x-request-id` (1 to 128 visible ASCII
characters) is kept, echoed on every response and carried by the routing record; any other
value is replaced by turnout's own id."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from tests.gateway._app_support import app_of, chat, client_of, messages, mock_provider
from turnout.gateway.responses import respond

if TYPE_CHECKING:
    from turnout.gateway.server.app import GatewayApp
    from turnout.record import RoutingRecord

CONFIG: dict[str, Any] = {
    "providers": [mock_provider("m1"), mock_provider("ant", wire="anthropic-messages")],
    "routes": [
        {
            "name": "main",
            "models": ["gpt-4o-mini"],
            "targets": [
                {"provider": "m1", "model": "first/fault:status=503", "name": "a"},
                {"provider": "m1", "model": "gpt-4o-mini", "name": "b"},
            ],
        },
        {
            "name": "broken",
            "models": ["broken"],
            "targets": [
                {"provider": "m1", "model": "x/fault:status=503", "name": "a"},
                {"provider": "m1", "model": "y/fault:status=503", "name": "b"},
            ],
        },
        {
            "name": "cached",
            "models": ["cached"],
            "cache": {"enabled": True},
            "targets": [{"provider": "m1", "model": "gpt-4o-mini"}],
        },
        {"name": "claude", "models": ["claude-*"], "targets": [{"provider": "ant"}]},
    ],
}
TRACE = "trace-7f3a/checkout:42"


@pytest.fixture
def app() -> GatewayApp:
    return app_of(CONFIG)


def _records(app: GatewayApp, route: str) -> list[RoutingRecord]:
    assert app.runtime is not None
    records: list[RoutingRecord] = []
    app.runtime.routes[route].route.on_routed = records.append
    return records


async def test_a_callers_id_is_echoed_and_is_the_records_id(app: GatewayApp) -> None:
    """A whole answer echoes the caller's id in `x-request-id`, `routing.request_id` and the
    routing record, whose call ids start with it too."""
    records = _records(app, "main")
    async with client_of(app) as client:
        reply = await client.post(
            "/v1/chat/completions", json=chat("gpt-4o-mini"), headers={"x-request-id": TRACE}
        )
    assert reply.status_code == 200
    assert reply.headers["x-request-id"] == TRACE
    assert reply.json()["routing"]["request_id"] == TRACE
    (record,) = records
    assert record.request_id == TRACE
    calls = [entry.call_id for entry in record.attempts]
    assert calls == [f"{TRACE}.1", f"{TRACE}.2"]


async def test_a_stream_and_embeddings_keep_it_too(app: GatewayApp) -> None:
    """A streamed answer's headers, and an embeddings answer's header and routing object,
    carry the caller's id."""
    records = _records(app, "main")
    headers = {"x-request-id": TRACE}
    async with client_of(app) as client:
        streamed = await client.post(
            "/v1/chat/completions", json=chat("gpt-4o-mini", stream=True), headers=headers
        )
        embedded = await client.post(
            "/v1/embeddings", json={"model": "gpt-4o-mini", "input": "hi"}, headers=headers
        )
    assert streamed.status_code == embedded.status_code == 200
    assert streamed.headers["x-request-id"] == embedded.headers["x-request-id"] == TRACE
    assert embedded.json()["routing"]["request_id"] == TRACE
    assert records[0].request_id == TRACE
    assert records[0].attempts[0].call_id == f"{TRACE}.1"


async def test_errors_echo_it_with_and_without_a_record(app: GatewayApp) -> None:
    """An error after calls (its record's headers) and one before any route (no record)
    both answer with the caller's id."""
    headers = {"x-request-id": TRACE}
    async with client_of(app) as client:
        exhausted = await client.post("/v1/chat/completions", json=chat("broken"), headers=headers)
        no_route = await client.post("/v1/messages", json=messages("llama-3"), headers=headers)
        missing = await client.get("/v1/nothing", headers=headers)
    assert (exhausted.status_code, no_route.status_code, missing.status_code) == (503, 503, 404)
    assert exhausted.headers["x-turnout-route"] == "broken"
    for reply in (exhausted, no_route, missing):
        assert reply.headers["x-request-id"] == TRACE


async def test_count_tokens_models_and_cache_hits_echo_it(app: GatewayApp) -> None:
    """Answers the engine does not route (a token count refused, the model list, a cache hit)
    echo the caller's id as well."""
    headers = {"x-request-id": TRACE}
    async with client_of(app) as client:
        counted = await client.post(
            "/v1/messages/count_tokens", json=messages("claude-x"), headers=headers
        )
        listed = await client.get("/v1/models", headers=headers)
        await client.post("/v1/chat/completions", json=chat("cached"))
        hit = await client.post("/v1/chat/completions", json=chat("cached"), headers=headers)
    # The in-process mock cannot count tokens: 404, from the handler after routing began.
    assert (counted.status_code, listed.status_code, hit.status_code) == (404, 200, 200)
    assert hit.headers["x-turnout-cache"] == "hit"
    assert hit.json()["routing"]["request_id"] == TRACE
    for reply in (counted, listed, hit):
        assert reply.headers["x-request-id"] == TRACE


@pytest.mark.parametrize(
    "sent",
    ["x" * 129, "has space", "tab\there", "caf\u00e9", ""],
    ids=["too-long", "space", "control", "non-ascii", "empty"],
)
async def test_an_id_that_breaks_the_rule_is_replaced(app: GatewayApp, sent: str) -> None:
    """Longer than 128 characters, or with anything but visible ASCII: turnout's own 32-hex
    id instead, the same in the header and the routing object."""
    async with client_of(app) as client:
        reply = await client.post(
            "/v1/chat/completions",
            json=chat("gpt-4o-mini"),
            headers={b"x-request-id": sent.encode("latin-1")},
        )
    echoed = reply.headers["x-request-id"]
    assert echoed != sent
    assert len(echoed) == 32
    assert int(echoed, 16) >= 0
    assert reply.json()["routing"]["request_id"] == echoed


async def test_the_longest_allowed_id_is_kept(app: GatewayApp) -> None:
    """Exactly 128 visible ASCII characters is still the caller's id."""
    sent = "!~" * 64
    async with client_of(app) as client:
        reply = await client.post(
            "/v1/chat/completions", json=chat("gpt-4o-mini"), headers={"x-request-id": sent}
        )
    assert reply.headers["x-request-id"] == sent


async def test_request_ids_stay_out_of_the_header_value_cache(app: GatewayApp) -> None:
    """Route and model names' header forms are cached, since they repeat; request ids never
    do, so neither the caller's nor turnout's may fill that bounded cache."""
    async with client_of(app) as client:
        mine = await client.post(
            "/v1/chat/completions", json=chat("gpt-4o-mini"), headers={"x-request-id": TRACE}
        )
        streamed = await client.post("/v1/chat/completions", json=chat("cached", stream=True))
        failed = await client.post("/v1/messages", json=messages("llama-3"))
    for reply in (mine, streamed, failed):
        assert reply.headers["x-request-id"] not in respond._VALUES
    assert "main" in respond._VALUES
