"""Bounded store calls from the event loop: a call past its bound fails as `StoreUnavailable`
without waiting for its thread, an unreachable database is `StoreUnavailable` too, and whether
the store answers is told to watchers once per change; PostgreSQL connections carry the
statement bound."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from tests.store.conftest import store_on
from turnout.errors import ObjectNotFound, StoreUnavailable
from turnout.store import migrate
from turnout.store.calls import StoreCalls

if TYPE_CHECKING:
    from pathlib import Path


async def test_a_call_past_its_bound_fails_while_its_thread_waits() -> None:
    """A call that outlives its bound is StoreUnavailable at once; its thread ends later."""
    calls = StoreCalls(timeout=0.05)
    release = threading.Event()
    with pytest.raises(StoreUnavailable, match=r"did not answer within 0\.05 s"):
        await calls.run(release.wait, 5.0)
    assert calls.answering is False
    release.set()
    assert await calls.run(lambda: 7) == 7
    assert calls.answering is True


async def test_an_unreachable_database_is_unavailable_and_other_errors_pass() -> None:
    """An OperationalError becomes StoreUnavailable; a refusal of the store's own is kept."""
    calls = StoreCalls()

    def unreachable() -> None:
        raise OperationalError("connect", {}, ConnectionRefusedError())

    def missing() -> None:
        raise ObjectNotFound("no such key")

    with pytest.raises(StoreUnavailable, match="cannot be reached"):
        await calls.run(unreachable)
    with pytest.raises(ObjectNotFound):
        await calls.run(missing)
    assert calls.answering is True


async def test_watchers_hear_each_change_once() -> None:
    """A watcher is told the present state, then each change, never a repeat."""
    calls = StoreCalls()
    heard: list[bool] = []
    calls.watch(heard.append)
    calls.mark("OperationalError")
    calls.mark("OperationalError")
    calls.mark(None)
    calls.mark(None)
    assert heard == [True, False, True]


def test_postgres_connections_carry_the_statement_bound(postgres_url: str, tmp_path: Path) -> None:
    """Each connection has the statement bound, and a migration leaves it as it found it."""
    with store_on("postgresql", tmp_path, postgres_url) as store:
        migrate(store)
        with store.engine.connect() as connection:
            assert connection.scalar(text("SHOW statement_timeout")) == "10s"
            assert connection.scalar(text("SHOW search_path")).startswith("t_")
