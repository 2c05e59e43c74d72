"""A route's own page (`/ui/routes/{id}`): targets in order with their weights and this
replica's health, traffic and failed requests from a real store's audit, who may use it, the
policy as configured, and what the page says without a store or when the store fails."""

from __future__ import annotations

import functools
import time
from typing import TYPE_CHECKING, Any

from tests.gateway._app_support import chat, client_of, mock_provider, runtime_of
from tests.gateway.ui.test_dashboard_http import ADMIN, CONFIG
from tests.store.audit._support import finished, record
from turnout.access.keys import hash_key
from turnout.gateway.server.app import GatewayApp
from turnout.gateway.server.audit import _traffic
from turnout.store.ledger import AuditWriter

if TYPE_CHECKING:
    from pathlib import Path

    from turnout.record import FinishedRequest
    from turnout.store import Store

SIGNED_IN = {"authorization": f"Bearer {ADMIN}"}
WEIGHTED: dict[str, Any] = {
    "providers": [mock_provider("east"), mock_provider("west")],
    "routes": [
        {
            "name": "split",
            "models": ["gpt-*"],
            "strategy": "weighted",
            "max_attempts": 3,
            "targets": [
                {"provider": "east", "model": "gpt-4o", "weight": 3},
                {"provider": "west", "model": "gpt-4o", "weight": 1},
            ],
        }
    ],
}


def _app(config: dict[str, Any]) -> GatewayApp:
    return GatewayApp(runtime_of(config), admin_hashes=lambda: frozenset({hash_key(ADMIN)}))


def _served(request_id: str, target: str, took: int) -> FinishedRequest:
    made = {**record(request_id), "route": "split"}
    made["attempts"] = [{**made["attempts"][1], "index": 1, "target": target, "duration_ms": took}]
    return finished(made, at=time.time())


def _refused(request_id: str, message: str) -> FinishedRequest:
    made = {**record(request_id, tokens=(0, 0)), "route": "split"}
    made["attempts"] = made["attempts"][:1]
    made["error"] = {"code": "all_targets_failed", "message": message}
    return finished(made, at=time.time())._replace(status=503, outcome="failed")


async def _audit(store: Store, tmp_path: Path, requests: list[FinishedRequest]) -> None:
    writer = AuditWriter(store, spill_dir=tmp_path / "spill")
    for done in requests:
        writer.submit(done)
    await writer.aclose()


async def test_without_a_store_the_page_shows_targets_health_grants_and_policy() -> None:
    """The route page lists the targets in order with this replica's health (the breaker a
    failing call opened), says there is no store, and shows the policy as configured; the
    dashboard's route name links to it."""
    app = _app(CONFIG)
    async with client_of(app) as client:
        await client.post("/v1/chat/completions", json=chat("gpt-4o"))
        home = await client.get("/ui", headers=SIGNED_IN)
        page = await client.get("/ui/routes/main", headers=SIGNED_IN)
    assert "href='/ui/routes/main'" in home.text
    assert page.status_code == 200
    text = page.text
    assert text.index("flaky:mock-429") < text.index("steady:gpt-4o")
    assert "breaker open" in text
    assert "This gateway has no store" in text
    assert "<dt>max_attempts</dt><dd>10</dd>" in text
    assert "<dt>strategy</dt><dd>type: failover</dd>" in text
    assert "<dt>circuit_breaker</dt><dd>the gateway&#x27;s defaults</dd>" in text


async def test_a_weighted_route_shows_configured_against_actual_share(
    store: Store, tmp_path: Path
) -> None:
    """A 3:1 route that ran 2:2 says so: each target's weight and configured share beside the
    calls, share, failures and p50 / p95 the audit holds for it, per window."""
    app = _app(WEIGHTED)
    assert app.dashboard is not None
    app.dashboard.traffic = functools.partial(_traffic, store)
    requests = [
        _served("e1", "east:gpt-4o", 10),
        _served("e2", "east:gpt-4o", 30),
        _served("w1", "west:gpt-4o", 50),
        _served("w2", "west:gpt-4o", 70),
    ]
    await _audit(store, tmp_path, requests)
    async with client_of(app) as client:
        page = await client.get("/ui/routes/split", headers=SIGNED_IN)
    text = page.text
    assert "whole fleet" in text
    assert "last hour: 4 requests, 4 answered ·" in text
    east = text[text.index("east:gpt-4o") : text.index("west:gpt-4o")]
    assert "3 (75%)" in east
    assert east.count("<td class='num'>2</td><td class='num'>50%</td>") == 2  # hour and day
    assert "10 ms / 30 ms" in east
    west = text[text.index("west:gpt-4o") : text.index("</tbody>")]
    assert "1 (25%)" in west
    assert "50 ms / 70 ms" in west


async def test_failed_requests_are_grouped_with_a_link_to_the_latest(
    store: Store, tmp_path: Path
) -> None:
    """Failed requests of the last day, grouped by message with their count, each group
    linking to its latest request's page."""
    app = _app(WEIGHTED)
    assert app.dashboard is not None
    app.dashboard.traffic = functools.partial(_traffic, store)
    requests = [_refused("f1", "every target failed"), _refused("f2", "every target failed")]
    await _audit(store, tmp_path, [*requests, _refused("g1", "no target <b>left</b>")])
    async with client_of(app) as client:
        page = await client.get("/ui/routes/split", headers=SIGNED_IN)
    errors = page.text[page.text.index("id='errors'") :]
    assert errors.index("every target failed") < errors.index("no target &lt;b&gt;left")
    assert "<td class='num'>2</td><td><a href='/ui/requests/f2'>f2</a>" in errors
    assert "<b>left</b>" not in errors


async def test_a_store_that_fails_leaves_the_page_up_saying_so() -> None:
    """The audit raising: the page still shows the targets, and says it cannot read the
    audit now."""
    app = _app(WEIGHTED)
    assert app.dashboard is not None

    async def failing(project: str, route: str) -> dict[str, Any]:
        raise TimeoutError("the store does not answer")

    app.dashboard.traffic = failing
    async with client_of(app) as client:
        page = await client.get("/ui/routes/split", headers=SIGNED_IN)
    assert page.status_code == 200
    assert "cannot be read now (TimeoutError)" in page.text
    assert "east:gpt-4o" in page.text


async def test_an_unknown_route_is_a_404_and_the_page_needs_a_sign_in() -> None:
    """A route no project serves is a 404 page; without a key the page sends to sign in."""
    async with client_of(_app(CONFIG)) as client:
        missing = await client.get("/ui/routes/nope", headers=SIGNED_IN)
        anonymous = await client.get("/ui/routes/main")
    assert missing.status_code == 404
    assert "No route &#x27;nope&#x27;" in missing.text
    assert (anonymous.status_code, anonymous.headers["location"]) == (303, "/ui/login")
