"""The PostgreSQL database of this run (skipped when none answers), for the suites that start
`turnout serve` on it."""

from __future__ import annotations

from tests.store.conftest import postgres_url

__all__ = ["postgres_url"]
