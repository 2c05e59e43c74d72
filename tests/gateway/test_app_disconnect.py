"""The gateway app in process: a caller that disconnects cancels the upstream call, which is
recorded `cancelled` and counts for nothing."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import orjson

from tests.gateway._app_support import chat, mock_provider, runtime_of
from turnout.gateway.server.app import GatewayApp

if TYPE_CHECKING:
    from collections.abc import Callable, MutableMapping

    from turnout.gateway.runtime.live import Runtime
    from turnout.record import RoutingRecord

CONFIG: dict[str, Any] = {
    "providers": [mock_provider("oa")],
    "routes": [
        {
            "name": "hang",
            "models": ["hang"],
            "targets": [
                {"provider": "oa", "model": "hang-a/fault:hang", "name": "a"},
                {"provider": "oa", "model": "hang-b", "name": "b"},
            ],
        },
        {
            "name": "plain",
            "models": ["plain"],
            "targets": [{"provider": "oa", "model": "plain-a", "name": "a"}],
        },
        {
            "name": "stall",
            "models": ["stall"],
            "targets": [{"provider": "oa", "model": "stall-a/fault:stall=2", "name": "a"}],
        },
    ],
}


class _Caller:
    """An ASGI client that sends one request body, then disconnects when told to."""

    def __init__(self, body: bytes, *, stuck_after: int | None = None) -> None:
        self.inbox: list[dict[str, Any]] = [
            {"type": "http.request", "body": body, "more_body": False}
        ]
        self.left = asyncio.Event()
        self.sent: list[dict[str, Any]] = []
        # After this many messages, `send` blocks (a caller that stopped reading).
        self.stuck_after = stuck_after

    async def receive(self) -> dict[str, Any]:
        if self.inbox:
            return self.inbox.pop(0)
        await self.left.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: MutableMapping[str, Any]) -> None:
        self.sent.append(dict(message))
        if self.stuck_after is not None and len(self.sent) > self.stuck_after:
            await asyncio.Event().wait()


def _scope(path: str) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [(b"content-type", b"application/json")],
    }


async def _until(ready: Callable[[], bool]) -> None:
    for _ in range(10_000):
        if ready():
            return
        await asyncio.sleep(0)
    raise AssertionError("the condition never held")


async def _disconnect_during(
    body: dict[str, Any],
    *,
    route: str = "hang",
    after_bytes: bool = False,
    stuck_after: int | None = None,
) -> tuple[_Caller, list[RoutingRecord], Runtime]:
    runtime = runtime_of(CONFIG)
    records: list[RoutingRecord] = []
    runtime.routes[route].route.on_routed = records.append
    caller = _Caller(orjson.dumps(body), stuck_after=stuck_after)
    served = asyncio.ensure_future(
        GatewayApp(runtime)(_scope("/v1/chat/completions"), caller.receive, caller.send)
    )
    if after_bytes:
        await _until(lambda: any(m.get("body") for m in caller.sent))
    else:
        await _until(lambda: bool(runtime.providers["oa"].requests))
    caller.left.set()
    await asyncio.wait_for(served, timeout=5)
    return caller, records, runtime


async def test_disconnect_cancels_a_whole_answer_call() -> None:
    """The hanging call is cancelled (not failed over), nothing is sent, health counts nothing."""
    caller, records, runtime = await _disconnect_during(chat("hang"))
    assert caller.sent == []
    [record] = records
    assert record.outcomes() == [("a", "cancelled"), ("b", "not_tried")]
    assert record.error is not None
    assert record.error["code"] == "cancelled"
    assert all(entry.failures == 0 for entry in runtime.health.snapshot())
    assert len(runtime.providers["oa"].requests) == 1


async def test_disconnect_cancels_a_stream_before_commit() -> None:
    """A streamed request whose caller leaves before the first token is cancelled too."""
    caller, records, _ = await _disconnect_during(chat("hang", stream=True))
    assert caller.sent == []
    [record] = records
    assert record.outcomes() == [("a", "cancelled"), ("b", "not_tried")]


async def test_disconnect_ends_a_committed_stream() -> None:
    """A caller leaving a committed stream cancels the upstream read; nothing more is sent."""
    caller, records, runtime = await _disconnect_during(
        chat("stall", stream=True), route="stall", after_bytes=True
    )
    [record] = records
    assert record.outcomes() == [("a", "cancelled")]
    assert not any(m.get("more_body") is False for m in caller.sent)
    assert all(entry.failures == 0 for entry in runtime.health.snapshot())


async def test_disconnect_while_a_write_is_pending_closes_the_stream() -> None:
    """A caller that stops reading and leaves mid-stream: the upstream stream is closed and
    the record is finished (`cancelled`) at once, not when the generator is collected."""
    _, records, _ = await _disconnect_during(
        chat("plain", stream=True), route="plain", after_bytes=True, stuck_after=2
    )
    [record] = records
    assert record.outcomes() == [("a", "cancelled")]
    assert record.attempts[0].committed
