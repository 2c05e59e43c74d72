"""The dashboard's sign-in sessions and the throttle on failed admin keys, over real sockets: a
session made on one replica works on another that shares the store, signing out ends it on
both, and a peer that keeps sending wrong admin keys is logged, then refused with 429 until
its window passes (on a fake clock)."""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING

import httpx

from tests.gateway._sign_in_lines import failed_sign_ins
from turnout.access.keys import hash_key
from turnout.access.sign_ins import SignInPolicy, SignInThrottle, fingerprint
from turnout.gateway.server.app import GatewayApp
from turnout.gateway.server.limits import ServerLimits
from turnout.gateway.server.listener import bind_socket, serving
from turnout.gateway.ui.session import StoredSessions
from turnout.routing.clock import FakeClock

from .._app_support import runtime_of
from .test_dashboard_http import ADMIN, CONFIG

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    import pytest

    from turnout.store import Store

WRONG = "adm-not-the-dashboard-key"


def _replica(store: Store | None, sign_ins: SignInThrottle | None = None) -> GatewayApp:
    """A gateway with the dashboard, its sessions in `store` (None: in its memory)."""
    app = GatewayApp(
        runtime_of(CONFIG), admin_hashes=lambda: frozenset({hash_key(ADMIN)}), sign_ins=sign_ins
    )
    assert app.dashboard is not None
    if store is not None:
        app.dashboard.sessions = StoredSessions(store)
    return app


@contextlib.asynccontextmanager
async def _served(app: GatewayApp) -> AsyncIterator[httpx.AsyncClient]:
    """`app` on a 127.0.0.1 socket, and a client of it that follows no redirect."""
    with bind_socket("127.0.0.1", 0) as sock:
        base = f"http://127.0.0.1:{sock.getsockname()[1]}"
        async with (
            serving(app, sock, ServerLimits(shutdown_grace=0.0)),
            httpx.AsyncClient(base_url=base) as client,
        ):
            yield client


async def _sign_in(client: httpx.AsyncClient) -> str:
    """Sign in with the form: the `cookie` header value that carries the session."""
    reply = await client.post("/ui/login", data={"key": ADMIN})
    assert reply.status_code == 303, reply.text
    return reply.headers.get_list("set-cookie")[0].split(";")[0]


async def test_a_session_works_on_every_replica_until_signed_out(store: Store) -> None:
    """Signed in on one replica, the cookie opens the dashboard on another sharing the store;
    signing out there deletes the session, so the old cookie fails on both."""
    async with _served(_replica(store)) as one, _served(_replica(store)) as two:
        cookie = await _sign_in(one)
        assert (await two.get("/ui", headers={"cookie": cookie})).status_code == 200
        out = await two.post("/ui/logout", headers={"cookie": cookie})
        assert out.status_code == 303
        assert "Max-Age=0" in out.headers["set-cookie"]
        for replica in (one, two):
            again = await replica.get("/ui", headers={"cookie": cookie})
            assert (again.status_code, again.headers["location"]) == (303, "/ui/login")


async def test_the_session_cookie_is_lax_and_not_secure_on_loopback() -> None:
    """Served on 127.0.0.1 over plain HTTP the cookie is HttpOnly, SameSite=Lax and not Secure
    (a browser would drop it), and holds a random id, never the key."""
    async with _served(_replica(None)) as client:
        first = await _sign_in(client)
        reply = await client.post("/ui/login", data={"key": ADMIN})
    cookie = reply.headers.get_list("set-cookie")[0]
    assert "HttpOnly" in cookie
    assert "SameSite=Lax" in cookie
    assert "Secure" not in cookie
    assert ADMIN not in cookie
    assert cookie.split(";")[0] != first


async def test_failed_sign_ins_are_logged_then_throttled_until_the_window_passes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Each wrong key on the form or the admin API logs a WARNING with the peer and a
    fingerprint (never the key); after the limit, even the right key gets 429 with
    Retry-After, until the window has passed on the clock."""
    clock = FakeClock()
    throttle = SignInThrottle(SignInPolicy(limit=3, window=60.0), clock=clock)
    caplog.set_level(logging.WARNING, logger="turnout.admin")
    async with _served(_replica(None, throttle)) as client:
        for _ in range(2):
            refused = await client.post("/ui/login", data={"key": WRONG})
            assert refused.status_code == 401
        clock.advance(10.0)
        wrong_bearer = {"authorization": f"Bearer {WRONG}"}
        assert (await client.get("/ui/part/health", headers=wrong_bearer)).status_code == 401
        throttled = await client.post("/ui/login", data={"key": ADMIN})
        assert throttled.status_code == 429
        assert throttled.headers["retry-after"] == "50"
        clock.advance(50.0)
        assert (await client.post("/ui/login", data={"key": ADMIN})).status_code == 303
        for _ in range(3):  # no key at all: one line for the burst
            assert (await client.post("/ui/login", data={"key": " "})).status_code == 401
    failed = failed_sign_ins(caplog, "admin_key")
    assert len(failed) == 3
    assert {(line["peer"], line["fingerprint"]) for line in failed} == {
        ("127.0.0.1", fingerprint(WRONG))
    }
    assert WRONG not in caplog.text
    keyless = failed_sign_ins(caplog, "none")
    assert keyless == [{"where": "dashboard", "peer": "127.0.0.1", "credential": "none"}]


async def test_a_failing_store_refuses_sign_in_with_503_not_a_crash(empty_store: Store) -> None:
    """When the sessions cannot be written or read (here: a store without its tables), the
    form says so with 503 and a cookie opens nothing; neither is a 500."""
    async with _served(_replica(empty_store)) as client:
        refused = await client.post("/ui/login", data={"key": ADMIN})
        page = await client.get("/ui", headers={"cookie": "turnout_session=made-up"})
    assert refused.status_code == 503
    assert "store cannot be reached" in refused.text
    assert (page.status_code, page.headers["location"]) == (303, "/ui/login")
