"""Finding requests in the audit, on both backends: each filter alone and together, pages cut
by row number that stay put as requests arrive, and a status class that is not one."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from tests.store.audit._support import finished, record
from turnout.errors import ConfigError
from turnout.store.audit_search import RequestFilter, search_requests
from turnout.store.ledger import AuditWriter

if TYPE_CHECKING:
    from pathlib import Path

    from turnout.record import FinishedRequest
    from turnout.store import Store


def _request(request_id: str, *, route: str, key: str, status: int, at: float) -> FinishedRequest:
    made = {**record(request_id), "route": route}
    done = finished(made, at=at, key_name=key)
    return done._replace(status=status, outcome="answered" if status < 400 else "failed")


@pytest.fixture
async def filled(store: Store, tmp_path: Path) -> Store:
    """Six requests, a second apart, newest last: two routes, two keys, three statuses."""
    now = time.time()
    specs = [
        ("r0", "chat", "app", 200), ("r1", "chat", "ops", 429), ("r2", "code", "app", 200),
        ("r3", "code", "ops", 503), ("r4", "chat", "app", 200), ("r5", "chat", "app", 502),
    ]  # fmt: skip
    writer = AuditWriter(store, spill_dir=tmp_path / "spill")
    for number, (request_id, route, key, status) in enumerate(specs):
        writer.submit(
            _request(request_id, route=route, key=key, status=status, at=now - 6 + number)
        )
    await writer.aclose()
    return store


def _ids(found: dict[str, object]) -> list[str]:
    return [row["request_id"] for row in found["rows"]]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("wanted", "ids"),
    [
        (RequestFilter(), ["r5", "r4", "r3", "r2", "r1", "r0"]),
        (RequestFilter(route="chat"), ["r5", "r4", "r1", "r0"]),
        (RequestFilter(key="ops"), ["r3", "r1"]),
        (RequestFilter(status="5xx"), ["r5", "r3"]),
        (RequestFilter(status="4xx"), ["r1"]),
        (RequestFilter(outcome="failed", route="chat"), ["r5", "r1"]),
        (RequestFilter(request_id="r2"), ["r2"]),
        (RequestFilter(route="chat", key="app", status="2xx"), ["r4", "r0"]),
        (RequestFilter(project="another"), []),
    ],
)
async def test_each_filter_keeps_what_it_names(
    filled: Store, wanted: RequestFilter, ids: list[str]
) -> None:
    """Each filter alone and some together keep exactly the requests they name, newest first."""
    assert _ids(search_requests(filled, wanted)) == ids


async def test_a_time_window_is_since_inclusive_until_exclusive(filled: Store) -> None:
    """A window keeps the requests in it; one that ends before them keeps none."""
    now = datetime.now(UTC)
    assert len(search_requests(filled, RequestFilter(since=now - timedelta(hours=1)))["rows"]) == 6
    assert search_requests(filled, RequestFilter(until=now - timedelta(hours=1)))["rows"] == []


async def test_pages_are_cut_by_row_and_stay_put(filled: Store, tmp_path: Path) -> None:
    """Pages of two, newest first; a request arriving meanwhile does not shift the next page;
    the last page has no next."""
    first = search_requests(filled, RequestFilter(), limit=2)
    assert _ids(first) == ["r5", "r4"]
    writer = AuditWriter(filled, spill_dir=tmp_path / "spill2")
    writer.submit(_request("r6", route="chat", key="app", status=200, at=time.time()))
    await writer.aclose()
    second = search_requests(filled, RequestFilter(), before=first["next"], limit=2)
    assert _ids(second) == ["r3", "r2"]
    last = search_requests(filled, RequestFilter(), before=second["next"], limit=2)
    assert (_ids(last), last["next"]) == (["r1", "r0"], None)
    row = last["rows"][0]
    assert (row["key_name"], row["route"], row["status"]) == ("ops", "chat", 429)
    assert row["at"].endswith("Z")


def test_a_status_that_is_no_class_is_refused(store: Store) -> None:
    """`3xx` is no class the search takes: a ConfigError naming it and the choices."""
    with pytest.raises(ConfigError, match="'3xx' is not a status class: use 2xx, 4xx or 5xx"):
        search_requests(store, RequestFilter(status="3xx"))
