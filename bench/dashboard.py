"""How long the dashboard's store reads take over a large request audit.

Run: ``python bench/dashboard.py [--rows 100000] [--postgres URL] [--rounds 5]``.

Fills a store with ``--rows`` audited requests of the last day (three routes, two targets
each, one request in twenty failed with one of three messages; each request has two attempt
rows and a usage entry, written by the audit writer's own statements), then times, median over
``--rounds``:

- ``dashboard``: the dashboard's spend per project and per key over 30 days (`usage_report`);
- ``route page``: the route page's reads of its busiest route (`route_windows` for the last
  hour and the last day: counts, per-target calls and latency percentiles, failed requests grouped);
- ``request list``: the request list's first page, unfiltered and for one route's 5xx;
- ``request page``: one request's record read back (`get_request`).

The route page reads its counts from the audit's (project, route, time, status) index and its
per-target figures from the route's latest 5,000 requests of each window.

On SQLite (a temporary file) and, with ``--postgres``, PostgreSQL (a temporary schema, dropped
at the end; vacuumed and analysed after the writes, as autovacuum soon does). The target:
each page's reads well under 200 ms at 100,000 rows.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
from audit import _postgres as temporary_schema
from cryptography.fernet import Fernet
from sqlalchemy import text

from turnout.store import SecretBox, Store, migrate, open_store
from turnout.store.audit_ids import IdsByName
from turnout.store.audit_rows import IdMint
from turnout.store.audit_search import RequestFilter, search_requests
from turnout.store.audit_writes import write_requests
from turnout.store.route_stats import route_windows
from turnout.store.usage import get_request, usage_report

ROUTES = ("chat", "code", "batch")
MESSAGES = ("every target failed: 429", "every target failed: timed out", "no target left")


def fill(store: Store, rows: int, seed: int = 7) -> None:
    """`rows` requests spread over the last day, written in batches of 2,000."""
    rng, mint, ids = random.Random(seed), IdMint(), IdsByName()
    now = time.time()
    for start in range(0, rows, 2000):
        audits: list[tuple[Any, ...]] = []
        attempts: list[tuple[Any, ...]] = []
        usage: list[tuple[Any, ...]] = []
        for number in range(start, min(rows, start + 2000)):
            route = ROUTES[number % 3] if number % 2 else ROUTES[0]
            at = now - rng.random() * 86_000
            request_id = f"req-{number:08d}"
            failed = number % 20 == 0
            served = f"{route}-{'a' if rng.random() < 0.75 else 'b'}"
            error = {"code": "all_targets_failed", "message": MESSAGES[number % 3]}
            record = orjson.dumps(
                {"request_id": request_id, "error": error if failed else None}
            ).decode()
            audits.append((
                at, "default", None, request_id, "/v1/chat/completions", "gpt-4o", route,
                None if failed else "openai", None if failed else "gpt-4o",
                "failed" if failed else "answered", 503 if failed else 200,
                "all_targets_failed" if failed else None, 40, 0, 100, 20, 0, 0, 0.001, record,
            ))  # fmt: skip
            attempts.append((request_id, 1, f"{route}-b", "openai", "gpt-4o", "failed",
                             "rate_limited", 429, 12, 0))  # fmt: skip
            if not failed:
                attempts.append((request_id, 2, served, "openai", "gpt-4o", "answered",
                                 None, None, rng.randint(20, 400), 0))  # fmt: skip
                usage.append((at, "default", None, mint(), request_id, "openai", "gpt-4o",
                              100, 20, 0, 0, 0.001))  # fmt: skip
        write_requests(store, audits, attempts, usage, ids)


def _median_ms(step, rounds: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(rounds):
        began = time.perf_counter()
        step()
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


def measure(store: Store, label: str, rows: int, rounds: int) -> None:
    began = time.perf_counter()
    fill(store, rows)
    filled = time.perf_counter() - began
    if store.is_postgres:  # what autovacuum does to freshly written tables within a minute
        with store.engine.connect() as connection:
            connection.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql(
                "VACUUM (ANALYZE) request_audit, request_attempts, usage_ledger"
            )
    now = datetime.now(UTC)

    def route_page() -> None:
        windows = {"hour": now - timedelta(hours=1), "day": now - timedelta(days=1)}
        route_windows(store, project="default", route="chat", windows=windows)

    def home_page() -> None:
        usage_report(store, group_by=["project", "key"], since=now - timedelta(days=30))

    def request_list() -> None:
        search_requests(store, RequestFilter())
        search_requests(store, RequestFilter(route="code", status="5xx"))

    def request_page() -> None:
        assert get_request(store, f"req-{rows // 2:08d}") is not None

    print(f"{label}: {rows:,} requests written in {filled:.1f} s")
    print(f"  dashboard (spend, 30 days): {_median_ms(home_page, rounds):7.1f} ms")
    print(f"  route page (hour and day):  {_median_ms(route_page, rounds):7.1f} ms")
    print(f"  request list (all; a route's 5xx): {_median_ms(request_list, rounds):7.1f} ms")
    print(f"  request page:               {_median_ms(request_page, rounds):7.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--postgres", help="a PostgreSQL URL (a temporary schema is used)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        sqlite = open_store(f"sqlite:///{Path(folder)}/turnout.db")
        migrate(sqlite)
        measure(sqlite, "SQLite", args.rows, args.rounds)
        sqlite.close()
    if args.postgres:
        admin, store, schema = temporary_schema(
            args.postgres, SecretBox(Fernet.generate_key().decode())
        )
        try:
            migrate(store)
            measure(store, "PostgreSQL", args.rows, args.rounds)
        finally:
            store.close()
            with admin.engine.begin() as connection:
                connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
            admin.close()


if __name__ == "__main__":
    main()
