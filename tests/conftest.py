"""The store backends (SQLite always, PostgreSQL when reachable) for every suite outside
tests/store that serves from the store: one PostgreSQL database per run for all of them; and
each test leaves the `turnout` logger as it found it."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import pytest

from tests.store.conftest import empty_store, postgres_url, store

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["empty_store", "postgres_url", "store"]


@pytest.fixture(autouse=True)
def _turnout_logger_restored() -> Iterator[None]:
    """A test that runs `turnout serve` in-process installs the gateway's log handler on the
    `turnout` logger, writing to this test's captured stderr; it is removed (and its lines
    written out) when the test ends, before the capture closes."""
    logger = logging.getLogger("turnout")
    handlers, level, propagate = list(logger.handlers), logger.level, logger.propagate
    yield
    for handler in [h for h in logger.handlers if h not in handlers]:
        logger.removeHandler(handler)
        handler.close()
    logger.setLevel(level)
    logger.propagate = propagate
