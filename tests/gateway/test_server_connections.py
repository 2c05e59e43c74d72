"""Which connections the server keeps when callers open more than it may hold: the policy
(`ConnectionTable`) alone, then the server over real 127.0.0.x sockets."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

import pytest

from tests.e2e._gateway import running_gateway
from tests.gateway._app_support import mock_provider
from tests.gateway._raw_http import RawClient, chat, connected, request
from turnout.gateway.server.connections import ConnectionTable
from turnout.gateway.server.limits import ServerLimits

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from tests.e2e._gateway import RunningGateway

CONFIG: dict[str, Any] = {
    "server": {"auth": "open"},
    "providers": [mock_provider("m")],
    "routes": [
        {"name": "quick", "models": ["quick"], "targets": [{"provider": "m"}]},
        {
            "name": "slow",
            "models": ["slow"],
            "targets": [{"provider": "m", "model": "slow/fault:latency=1.0"}],
        },
    ],
}


class Conn:
    """A connection as the table sees it."""

    def __init__(self, name: str, *, idle: bool = True) -> None:
        self.name = name
        self.is_idle = idle

    def __repr__(self) -> str:
        return self.name


def _table(cap: int, per_address: int, *conns: tuple[Conn, str]) -> ConnectionTable[Conn]:
    table: ConnectionTable[Conn] = ConnectionTable(cap, per_address)
    for conn, address in conns:
        assert table.admit(conn, address).admitted
    return table


def test_under_both_bounds_a_connection_is_admitted_alone() -> None:
    """Below the cap and the address's share, nothing is closed."""
    table = _table(3, 2, (Conn("a"), "10.0.0.1"))
    assert table.admit(Conn("b"), "10.0.0.1") == (True, None)
    assert len(table) == 2


def test_at_the_cap_the_idlest_idle_connection_makes_room() -> None:
    """At the cap, the idle connection with the oldest activity is closed for the new one;
    busy ones are passed over."""
    busy, old, new = Conn("busy", idle=False), Conn("old"), Conn("new")
    table = _table(3, 3, (busy, "10.0.0.1"), (old, "10.0.0.2"), (new, "10.0.0.3"))
    incoming = Conn("incoming")
    assert table.admit(incoming, "10.0.0.4") == (True, old)
    assert old not in table
    assert incoming in table


def test_activity_makes_a_connection_the_least_idle() -> None:
    """A connection that started a request head (`touch`) is closed after older idle ones."""
    first, second = Conn("first"), Conn("second")
    table = _table(2, 2, (first, "10.0.0.1"), (second, "10.0.0.2"))
    table.touch(first)
    assert table.admit(Conn("third"), "10.0.0.3").evicted is second


def test_at_the_cap_with_every_connection_busy_the_new_one_is_refused() -> None:
    """When no connection is idle, the new one is refused and nothing is closed."""
    table = _table(2, 2, (Conn("a", idle=False), "10.0.0.1"), (Conn("b", idle=False), "10.0.0.2"))
    assert table.admit(Conn("c"), "10.0.0.3") == (False, None)
    assert len(table) == 2


def test_an_address_at_its_share_only_replaces_its_own() -> None:
    """An address holding its share replaces its own idlest connection, never another
    address's, even an idler one."""
    theirs, mine_old, mine_new = Conn("theirs"), Conn("mine-old"), Conn("mine-new")
    table = _table(10, 2, (theirs, "10.0.0.9"), (mine_old, "10.0.0.1"), (mine_new, "10.0.0.1"))
    assert table.admit(Conn("mine-3"), "10.0.0.1").evicted is mine_old
    assert theirs in table
    assert table.count("10.0.0.1") == 2


def test_an_address_at_its_share_with_only_busy_connections_is_refused() -> None:
    """An address whose connections are all busy gets no more, however free the cap is."""
    table = _table(10, 1, (Conn("a", idle=False), "10.0.0.1"))
    assert table.admit(Conn("b"), "10.0.0.1") == (False, None)
    assert table.admit(Conn("c"), "10.0.0.2").admitted


def test_release_forgets_a_connection_and_its_address() -> None:
    """A released connection no longer counts against the cap or its address."""
    conn = Conn("a")
    table = _table(1, 1, (conn, "10.0.0.1"))
    table.release(conn)
    table.release(conn)  # twice is harmless
    assert (len(table), table.count("10.0.0.1")) == (0, 0)


def test_the_share_default_is_half_the_cap() -> None:
    """Without `max_connections_per_address`, one address may hold half the cap."""
    assert ServerLimits(max_connections=4096).per_address == 2048
    assert ServerLimits(max_connections=1).per_address == 1
    assert ServerLimits(max_connections=8, max_connections_per_address=20).per_address == 8


def _port(gateway: RunningGateway) -> int:
    return int(gateway.url.rsplit(":", 1)[1])


@contextlib.asynccontextmanager
async def _from(port: int, host: str) -> AsyncIterator[RawClient]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(host, 0))
    client = RawClient(reader, writer)
    try:
        yield client
    finally:
        client.close()


async def test_idle_sockets_make_room_for_real_requests() -> None:
    """With the cap held by sockets that never send a byte, a new caller's chat and
    `/healthz` are answered, and the idlest sockets are the ones closed."""
    limits = ServerLimits(max_connections=4, max_connections_per_address=4, shutdown_grace=0.0)
    async with running_gateway(CONFIG, limits) as gateway, contextlib.AsyncExitStack() as stack:
        port = _port(gateway)
        idle = [await stack.enter_async_context(connected(port)) for _ in range(4)]
        await asyncio.sleep(0.05)  # all four accepted
        async with connected(port) as caller, connected(port) as health:
            await caller.send(request("POST", "/v1/chat/completions", chat("quick")))
            assert (await caller.response()).status == 200
            await health.send(request("GET", "/healthz"))
            assert (await health.response()).status == 200
            assert [await each.closed(wait=0.5) for each in idle[:2]] == [True, True]
            with pytest.raises(TimeoutError):  # still open: nothing to read, no close
                await idle[2].closed(wait=0.05)
            assert len(gateway.listener.connections) == 4


async def test_one_address_holding_its_share_cannot_push_out_another() -> None:
    """127.0.0.2 at its share replaces only its own idle sockets: 127.0.0.3's idle socket
    stays open and is served after."""
    limits = ServerLimits(max_connections=8, max_connections_per_address=2, shutdown_grace=0.0)
    async with running_gateway(CONFIG, limits) as gateway, contextlib.AsyncExitStack() as stack:
        port = _port(gateway)
        other = await stack.enter_async_context(_from(port, "127.0.0.3"))
        await asyncio.sleep(0.02)
        flood = [await stack.enter_async_context(_from(port, "127.0.0.2")) for _ in range(6)]
        await asyncio.sleep(0.05)
        assert [await each.closed(wait=0.5) for each in flood[:4]] == [True] * 4
        await other.send(request("GET", "/healthz"))
        assert (await other.response()).status == 200


async def test_busy_connections_are_kept_and_the_new_one_refused() -> None:
    """With every connection running a request, a new one is closed at once and the running
    requests are answered."""
    limits = ServerLimits(max_connections=2, max_connections_per_address=2, shutdown_grace=0.0)
    async with running_gateway(CONFIG, limits) as gateway, contextlib.AsyncExitStack() as stack:
        port = _port(gateway)
        busy = [await stack.enter_async_context(connected(port)) for _ in range(2)]
        for each in busy:
            await each.send(request("POST", "/v1/chat/completions", chat("slow")))
        await asyncio.sleep(0.05)
        async with connected(port) as extra:
            assert await extra.closed(wait=0.5)
        assert [(await each.response()).status for each in busy] == [200, 200]
