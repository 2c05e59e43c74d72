"""The admin API and failed admin keys, over a real socket: each wrong key is a WARNING line
naming the peer and the key's fingerprint (never the key), and a peer past the limit gets 429
with `Retry-After`, its keys unchecked, until its window passes on the clock."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import httpx

from tests.gateway._sign_in_lines import failed_sign_ins
from tests.gateway.admin._support import HEADERS, StoreContext, file_config
from turnout.access.sign_ins import SignInPolicy, SignInThrottle, fingerprint
from turnout.gateway.server.app import GatewayApp
from turnout.gateway.server.limits import ServerLimits
from turnout.gateway.server.listener import bind_socket, serving
from turnout.routing.clock import FakeClock

if TYPE_CHECKING:
    import pytest

    from turnout.store import Store

WRONG = "adm-a-wrong-guess-0123456789"


async def test_wrong_admin_keys_are_logged_then_throttled(
    module_store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    """Five wrong keys: five WARNING lines, then 429 with Retry-After even for the right key
    (a request without a key is no attempt and still 401); once the oldest failure is a window
    old, the right key is served again."""
    clock = FakeClock()
    throttle = SignInThrottle(SignInPolicy(limit=5, window=120.0), clock=clock)
    context = StoreContext(module_store, file_config())
    runtime = context.runtime_for(context.project)
    assert runtime is not None
    app = GatewayApp(runtime, admin=context, sign_ins=throttle)
    caplog.set_level(logging.WARNING, logger="turnout.admin")
    wrong = {"authorization": f"Bearer {WRONG}"}
    with bind_socket("127.0.0.1", 0) as sock:
        base = f"http://127.0.0.1:{sock.getsockname()[1]}/admin/v1"
        async with (
            serving(app, sock, ServerLimits(shutdown_grace=0.0)),
            httpx.AsyncClient(base_url=base) as client,
        ):
            for _ in range(5):
                assert (await client.get("/projects", headers=wrong)).status_code == 401
                clock.advance(1.0)
            refused = await client.get("/projects", headers=HEADERS)
            keyless = await client.get("/projects")
            clock.advance(116.0)
            served = await client.get("/projects", headers=HEADERS)
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "too_many_sign_ins"
    assert refused.headers["retry-after"] == "115"
    assert keyless.status_code == 401
    assert served.status_code == 200
    failed = failed_sign_ins(caplog, "admin_key")
    assert len(failed) == 5
    assert {(line["peer"], line["fingerprint"]) for line in failed} == {
        ("127.0.0.1", fingerprint(WRONG))
    }
    assert WRONG not in caplog.text
    keyless_lines = failed_sign_ins(caplog, "none")
    assert keyless_lines == [{"where": "admin_api", "peer": "127.0.0.1", "credential": "none"}]
