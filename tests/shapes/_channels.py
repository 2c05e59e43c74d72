"""Connections pinned to one worker: a `Channel` is one keep-alive HTTP connection to a served
process, and it knows which process (a worker of `--workers N`, or the served process itself)
accepted it.

The workers of `--workers N` share one listening socket, so a caller cannot choose one; but a
connection, once accepted, stays with the worker that accepted it. Which one that is the kernel
knows: the server's end of the connection is a socket in `/proc/net/tcp` whose inode one
process holds open. `open_channels` opens connections until every worker of a process has one.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import httpx

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from tests.e2e._replicas import Replica

__all__ = ["IDLE", "Channel", "Reply", "open_channels"]

# How long a process's workers may take to answer their first `/readyz` 200 (a loaded machine
# starts slowly), and how many connections may go to one worker before another one takes one.
_READY_LIMIT = 30.0
_OPEN_LIMIT = 200
IDLE = 3.0
# The connections are plain HTTP; one TLS context for all of them spares each new client
# loading the certificate bundle (a noticeable cost when a test opens dozens).
_TLS = ssl.create_default_context()


class Reply(Protocol):
    """A response of httpx, or of the SDK's own copy of it (what `check` reads)."""

    @property
    def extensions(self) -> Mapping[str, Any]: ...

    @property
    def headers(self) -> Mapping[str, str]: ...


class Channel:
    """Requests to the process `worker` (a pid) of `replica`, over one keep-alive connection
    that it accepted. A reply that closes the connection (a 401 does, its body unread) is
    still checked to have come from `worker`; the next request first opens connections until
    one is accepted by `worker` again. So does a request after the connection was idle for
    `IDLE` seconds (the gateway closes a connection idle for 5 s)."""

    def __init__(self, replica: Replica, worker: int, client: httpx.AsyncClient, stream: object):
        self.replica = replica
        self.worker = worker
        self.client = client
        self._stream = stream  # the connection: the same object for each reply on it
        self._closing = False
        self._used = time.monotonic()

    def __repr__(self) -> str:
        return f"Channel({self.replica.name}, worker {self.worker})"

    async def pinned(self) -> httpx.AsyncClient:
        """The client whose one connection `worker` accepted (a new one if it closed)."""
        if self._closing or time.monotonic() - self._used > IDLE:
            await self.client.aclose()
            _, self.client, self._stream = await _reach(self.replica, self.worker.__eq__)
            self._closing = False
        return self.client

    async def send(self, method: str, path: str, **options: Any) -> httpx.Response:
        """One request on `worker`'s connection (read whole)."""
        reply = await (await self.pinned()).request(method, path, **options)
        self.check(reply)
        return reply

    def check(self, reply: Reply) -> None:
        """Fail unless `reply` came over `worker`'s connection."""
        stream = reply.extensions["network_stream"]
        assert stream is self._stream, f"{self!r}: the reply came over another connection"
        self._used = time.monotonic()
        if reply.headers.get("connection", "").lower() == "close":
            self._closing = True

    async def aclose(self) -> None:
        """Close the connection."""
        await self.client.aclose()


async def open_channels(replica: Replica, workers: int) -> list[Channel]:
    """A channel to each of `replica`'s `workers` serving processes, each of which answered
    `/readyz` with 200 on it (in the order their workers were first reached)."""
    found: list[Channel] = []
    try:
        while len(found) < workers:
            known = frozenset(channel.worker for channel in found)

            def is_new(pid: int, known: frozenset[int] = known) -> bool:
                return pid not in known

            worker, client, stream = await _reach(replica, is_new)
            found.append(Channel(replica, worker, client, stream))
    except BaseException:
        await asyncio.gather(*(channel.aclose() for channel in found))
        raise
    return found


async def _reach(
    replica: Replica, wanted: Callable[[int], bool]
) -> tuple[int, httpx.AsyncClient, object]:
    """Open connections to `replica` until one is accepted by a process `wanted` says yes
    to, and answered `/readyz` with 200: that process, a client on the connection, and the
    connection."""
    spare: list[httpx.AsyncClient] = []
    try:
        for _ in range(_OPEN_LIMIT):
            client = _pinned_client(replica.url)
            reply = await _ready(client, replica)
            stream = reply.extensions["network_stream"]
            worker = owner_of(replica, int(stream.get_extra_info("client_addr")[1]))
            if wanted(worker):
                return worker, client, stream
            spare.append(client)  # kept open, so the next connection may go elsewhere
        raise AssertionError(f"{replica!r}: no connection reached the worker wanted")
    finally:
        await asyncio.gather(*(client.aclose() for client in spare))


def _pinned_client(url: str) -> httpx.AsyncClient:
    """A client that keeps one connection and never opens a second one."""
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1, keepalive_expiry=60)
    return httpx.AsyncClient(base_url=url, limits=limits, timeout=30, verify=_TLS)


async def _ready(client: httpx.AsyncClient, replica: Replica) -> httpx.Response:
    """`/readyz` on `client` until it answers 200 (a new connection after each failure)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _READY_LIMIT
    while True:
        try:
            reply = await client.get("/readyz")
        except httpx.TransportError:
            reply = None
        if reply is not None and reply.status_code == 200:
            return reply
        assert replica.running, f"{replica!r} ended: {replica.tail()}"
        assert loop.time() < deadline, f"{replica!r} not ready: {replica.tail()}"
        await asyncio.sleep(0.05)


def owner_of(replica: Replica, client_port: int) -> int:
    """The pid of the process of `replica` holding the server's end of the connection from
    `client_port` to the replica's port."""
    server_port = int(replica.url.rsplit(":", 1)[1])
    inode = _socket_inode(server_port, client_port)
    link = f"socket:[{inode}]"
    for pid in _process_tree(replica):
        if link in _open_files(pid):
            return pid
    raise AssertionError(f"{replica!r}: no process holds the connection from {client_port}")


def _socket_inode(local: int, remote: int) -> str:
    """The inode of the IPv4 socket from 127.0.0.1:`local` to 127.0.0.1:`remote`."""
    wanted = (f"0100007F:{local:04X}", f"0100007F:{remote:04X}")
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if (fields[1], fields[2]) == wanted:
            return fields[9]
    raise AssertionError(f"no socket 127.0.0.1:{local} -> 127.0.0.1:{remote} in /proc/net/tcp")


def _process_tree(replica: Replica) -> Sequence[int]:
    """`replica`'s process first, then its children."""
    assert replica.process is not None
    pid = replica.process.pid
    return [pid, *_children(pid)]


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(child) for child in text.split()]


def _open_files(pid: int) -> set[str]:
    folder = f"/proc/{pid}/fd"
    try:
        names = os.listdir(folder)
    except OSError:
        return set()
    found = set()
    for name in names:
        try:
            found.add(os.readlink(f"{folder}/{name}"))
        except OSError:
            continue
    return found
