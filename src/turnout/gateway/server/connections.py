"""Which connections a server keeps when callers open more than it may hold: the policy alone,
no I/O (the listener closes what it says to close).

Rule 1: at most `cap` connections are open, and at most `per_address` of them from one peer
address.
Rule 2: a new connection over either bound takes the place of the idlest connection it
competes with: of its own address's when that address holds its share, else of any address's.
The idlest is the one whose last activity (its accept, the start of a request head, the end of
a response) is oldest, among the connections that are idle: no request running or waiting to
run. Connections that never send a byte are so the first to go, and a caller holding many of
them cannot push out another's: past its share it only replaces its own.
Rule 3: when no connection it competes with is idle, the new connection is refused (the
listener closes it at once).
"""

from __future__ import annotations

from typing import Generic, NamedTuple, Protocol, TypeVar

__all__ = ["Admission", "ConnectionTable", "Tracked"]


class Tracked(Protocol):
    """What the table asks of a connection."""

    @property
    def is_idle(self) -> bool:
        """No request is running or waiting to run on it."""


C = TypeVar("C", bound=Tracked)


class Admission(NamedTuple, Generic[C]):
    """The table's answer to a new connection: whether it is in, and the connection it
    replaces (to be closed), if any."""

    admitted: bool
    evicted: C | None = None


class ConnectionTable(Generic[C]):
    """The open connections, in order of their last activity, overall and per peer address
    (see the module rules). `per_address` above `cap` is `cap`."""

    def __init__(self, cap: int, per_address: int) -> None:
        self.cap = cap
        self.per_address = min(per_address, cap)
        self._order: dict[C, str | None] = {}  # oldest activity first
        self._by_address: dict[str | None, dict[C, None]] = {}

    def __len__(self) -> int:
        return len(self._order)

    def __contains__(self, conn: object) -> bool:
        return conn in self._order

    def count(self, address: str | None) -> int:
        """How many connections `address` holds."""
        own = self._by_address.get(address)
        return 0 if own is None else len(own)

    def admit(self, conn: C, address: str | None) -> Admission[C]:
        """Rules 1 to 3 for a new connection from `address`."""
        own = self._by_address.get(address)
        evicted: C | None = None
        if own is not None and len(own) >= self.per_address:
            evicted = _idlest(own)
        elif len(self._order) >= self.cap:
            evicted = _idlest(self._order)
        else:
            self._add(conn, address)
            return Admission(admitted=True)
        if evicted is None:
            return Admission(admitted=False)
        self.release(evicted)
        self._add(conn, address)
        return Admission(admitted=True, evicted=evicted)

    def touch(self, conn: C) -> None:
        """`conn` was active now: it becomes the least idle."""
        if conn not in self._order:
            return
        address = self._order.pop(conn)
        self._order[conn] = address
        own = self._by_address[address]
        del own[conn]
        own[conn] = None

    def release(self, conn: C) -> None:
        """`conn` closed (nothing when it is not in the table)."""
        if conn not in self._order:
            return
        address = self._order.pop(conn)
        own = self._by_address[address]
        del own[conn]
        if not own:
            del self._by_address[address]

    def _add(self, conn: C, address: str | None) -> None:
        self._order[conn] = address
        self._by_address.setdefault(address, {})[conn] = None


def _idlest(conns: dict[C, None] | dict[C, str | None]) -> C | None:
    """Rule 2: the first idle connection in activity order, None when all are busy."""
    for conn in conns:
        if conn.is_idle:
            return conn
    return None
