"""The `/ui` dashboard over HTTP: sign-in, the parts it refreshes, assets, escaping, refusals."""

from __future__ import annotations

from typing import Any

import pytest

from turnout.access.keys import hash_key
from turnout.gateway.server.app import GatewayApp

from .._app_support import chat, client_of, mock_provider, runtime_of

ADMIN = "adm-dashboard-test-key"
CONFIG: dict[str, Any] = {
    "defaults": {"circuit_breaker": {"failure_threshold": 1, "cooldown_seconds": 60}},
    "providers": [mock_provider("flaky"), mock_provider("steady")],
    "routes": [
        {
            "name": "main",
            "models": ["gpt-*"],
            "targets": [
                {"provider": "flaky", "model": "mock-429"},
                {"provider": "steady", "model": "gpt-4o"},
            ],
        }
    ],
}


def _app(config: dict[str, Any] = CONFIG) -> GatewayApp:
    return GatewayApp(runtime_of(config), admin_hashes=lambda: frozenset({hash_key(ADMIN)}))


def _signed_in() -> dict[str, str]:
    return {"authorization": f"Bearer {ADMIN}"}


async def test_the_dashboard_redirects_to_sign_in_without_a_key() -> None:
    """A browser without an admin key is sent to the sign-in form."""
    async with client_of(_app()) as client:
        reply = await client.get("/ui")
        assert reply.status_code == 303
        assert reply.headers["location"] == "/ui/login"
        form = await client.get("/ui/login")
        assert form.status_code == 200
        assert "Admin key" in form.text


async def test_signing_in_sets_a_secure_http_only_session_cookie() -> None:
    """The right key signs in with a session cookie scripts cannot read, `Secure` off loopback,
    holding a session id and never the key; a wrong key is refused."""
    async with client_of(_app()) as client:
        wrong = await client.post("/ui/login", data={"key": "nope"})
        assert wrong.status_code == 401
        assert "not an admin key" in wrong.text
        right = await client.post("/ui/login", data={"key": ADMIN})
        assert right.status_code == 303
        cookie = right.headers.get_list("set-cookie")[0]
        assert cookie.startswith("turnout_session=")
        for flag in ("HttpOnly", "SameSite=Lax", "Path=/ui", "Max-Age=43200", "Secure"):
            assert flag in cookie
        assert ADMIN not in cookie
        session = cookie.split(";")[0]
        page = await client.get("/ui", headers={"cookie": session})
        assert page.status_code == 200
        assert "Upstream health" in page.text


async def test_parts_and_data_refuse_a_caller_without_a_key() -> None:
    """A refreshing part answers 401 and tells htmx to go to the sign-in form; a page (a
    request's, a route's) sends the browser to the form."""
    async with client_of(_app()) as client:
        for path in ("/ui/part/health", "/ui/data.json"):
            reply = await client.get(path)
            assert reply.status_code == 401, path
            assert reply.headers["hx-redirect"] == "/ui/login"
            assert reply.json()["error"]["code"] == "invalid_admin_key"
        for path in ("/ui/requests/x", "/ui/routes/main"):
            reply = await client.get(path)
            assert (reply.status_code, reply.headers["location"]) == (303, "/ui/login"), path


async def test_a_failover_shows_in_health_requests_and_charts() -> None:
    """After a request that failed over, the failing upstream, the request and the failover
    count all show."""
    app = _app()
    async with client_of(app) as client:
        served = await client.post("/v1/chat/completions", json=chat("gpt-4o"))
        assert served.status_code == 200
        request_id = served.headers["x-request-id"]
        health = await client.get("/ui/part/health", headers=_signed_in())
        assert "flaky/mock-429" in health.text
        assert "breaker open" in health.text
        requests = await client.get("/ui/part/requests", headers=_signed_in())
        assert f"/ui/requests/{request_id}" in requests.text
        assert "steady:gpt-4o" in requests.text
        record = await client.get(f"/ui/requests/{request_id}", headers=_signed_in())
        assert record.status_code == 200
        assert "rate_limited" in record.text
        data = (await client.get("/ui/data.json", headers=_signed_in())).json()
        assert data["failovers"]["series"]["main"][-1] == 1
        assert sum(data["usage"]["requests"]) == 1


async def test_routes_show_targets_in_try_order_and_who_may_use_them() -> None:
    """The routes part lists each route's targets in order and its grant."""
    async with client_of(_app()) as client:
        routes = await client.get("/ui/part/routes", headers=_signed_in())
    text = routes.text
    assert text.index("flaky:mock-429") < text.index("steady:gpt-4o")
    assert "everyone" in text


async def test_the_routing_test_form_resolves_and_escapes() -> None:
    """The form says where a model goes; a refused model is shown escaped, never as markup."""
    async with client_of(_app()) as client:
        found = await client.post("/ui/part/test", data={"model": "gpt-4o"}, headers=_signed_in())
        assert "route <strong>main</strong>" in found.text
        hostile = "<img src=x onerror=alert(1)>"
        refused = await client.post("/ui/part/test", data={"model": hostile}, headers=_signed_in())
        assert hostile not in refused.text
        assert "&lt;img src=x onerror=alert(1)&gt;" in refused.text


@pytest.mark.parametrize(
    ("path", "status", "kind"),
    [
        ("/ui/assets/htmx.min.js", 200, "text/javascript; charset=utf-8"),
        ("/ui/assets/uPlot.min.css", 200, "text/css; charset=utf-8"),
        ("/ui/assets/%2e%2e%2fapp.py", 404, "text/plain"),
        ("/ui/assets/app.py", 404, "text/plain"),
    ],
)
async def test_assets_are_served_by_name_only(path: str, status: int, kind: str) -> None:
    """Shipped assets are served without a key; nothing else under the package is."""
    async with client_of(_app()) as client:
        reply = await client.get(path)
    assert reply.status_code == status
    assert reply.headers["content-type"] == kind


async def test_pages_forbid_framing_and_foreign_scripts() -> None:
    """Every page carries a policy that allows scripts from this server only."""
    async with client_of(_app()) as client:
        page = await client.get("/ui", headers=_signed_in())
    policy = page.headers["content-security-policy"]
    assert "default-src 'self'" in policy
    assert "frame-ancestors 'none'" in policy
    assert page.headers["cache-control"] == "no-store"


async def test_without_admin_keys_there_is_no_dashboard() -> None:
    """A gateway without admin keys answers 404 at /ui, like any unknown path."""
    app = GatewayApp(runtime_of(CONFIG))
    async with client_of(app) as client:
        reply = await client.get("/ui")
    assert reply.status_code == 404


async def test_a_record_page_says_who_served_and_after_how_many_failovers() -> None:
    """A request served by its second target names it and its one failover."""
    async with client_of(_app()) as client:
        served = await client.post("/v1/chat/completions", json=chat("gpt-4o"))
        record = await client.get(
            f"/ui/requests/{served.headers['x-request-id']}", headers=_signed_in()
        )
        assert "served by <strong>steady:gpt-4o</strong>" in record.text
        assert ", after 1 failover." in record.text
        assert "Route <a href='/ui/routes/main'><strong>main</strong></a>" in record.text


async def test_a_record_page_of_a_request_nobody_served_counts_calls_and_skips() -> None:
    """When every target failed, the page says no target answered and how many calls were
    made; once the breakers are open, how many targets were passed over."""
    config = {
        **CONFIG,
        "routes": [
            {
                "name": "down",
                "models": ["down-*"],
                "targets": [
                    {"provider": "flaky", "model": "mock-503"},
                    {"provider": "steady", "model": "mock-500"},
                ],
            }
        ],
    }
    async with client_of(_app(config)) as client:
        lines = []
        for _ in range(2):
            failed = await client.post("/v1/chat/completions", json=chat("down-1"))
            assert failed.status_code >= 500
            page = await client.get(
                f"/ui/requests/{failed.headers['x-request-id']}", headers=_signed_in()
            )
            lines.append(page.text)
        assert "<strong>no target answered</strong> (2 calls made) in" in lines[0]
        # With both breakers open, both targets are passed over; the route's default for an
        # all-unhealthy route then still probes one of them.
        assert (
            "<strong>no target answered</strong> (1 call made, 2 targets passed over)" in (lines[1])
        )
        assert "served by" not in lines[0] + lines[1]
