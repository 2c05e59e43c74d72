"""The dashboard's request list (`/ui/requests`): filters from a plain GET form, found in a
real store's audit (SQLite and PostgreSQL) with the key, model, route, status and served
columns, pages that link to the older ones, and this process's memory without a store."""

from __future__ import annotations

import functools
import time
from typing import TYPE_CHECKING

from tests.gateway._app_support import chat, client_of
from tests.gateway.ui.test_dashboard_http import CONFIG
from tests.gateway.ui.test_route_page import SIGNED_IN, WEIGHTED, _app, _audit
from tests.store.audit._support import finished, record
from turnout.gateway.server.audit import _search

if TYPE_CHECKING:
    from pathlib import Path

    from turnout.record import FinishedRequest
    from turnout.store import Store


def _request(number: int, *, key: str, status: int) -> FinishedRequest:
    made = {**record(f"req-{number:03d}"), "route": "split", "requested_model": "gpt-4o"}
    done = finished(made, at=time.time() - 100 + number, key_name=key)
    return done._replace(status=status, outcome="answered" if status < 400 else "failed")


async def _listed(store: Store, tmp_path: Path, count: int) -> None:
    requests = [
        _request(n, key="app" if n % 2 else "ops", status=503 if n % 5 == 0 else 200)
        for n in range(count)
    ]
    await _audit(store, tmp_path, requests)


async def test_the_list_filters_by_key_and_status_with_every_column(
    store: Store, tmp_path: Path
) -> None:
    """`?key=ops&status=5xx` lists just those requests, newest first, each row with its key,
    model, route, status and who served it, linking to its record."""
    app = _app(WEIGHTED)
    assert app.dashboard is not None
    app.dashboard.search = functools.partial(_search, store)
    await _listed(store, tmp_path, 20)
    async with client_of(app) as client:
        page = await client.get("/ui/requests?key=ops&status=5xx", headers=SIGNED_IN)
    assert page.status_code == 200
    table = page.text[page.text.index("id='found'") :]
    ids = [part.split("'")[0] for part in table.split("href='/ui/requests/")[1:]]
    assert ids == ["req-010", "req-000"]
    assert "<td>ops</td><td>gpt-4o</td><td>split</td><td class='num'>503</td>" in table
    assert "<input name='key' list='key-names' value='ops'>" in page.text
    assert "<option value='5xx' selected>" in page.text
    assert "Every replica&#x27;s requests" in page.text


async def test_pages_link_to_the_older_requests_keeping_the_filters(
    store: Store, tmp_path: Path
) -> None:
    """Sixty requests of key `app` in pages of fifty: the first page links to the older one,
    which keeps the filter and holds the remaining ten, with no further link."""
    app = _app(WEIGHTED)
    assert app.dashboard is not None
    app.dashboard.search = functools.partial(_search, store)
    await _listed(store, tmp_path, 120)
    async with client_of(app) as client:
        first = await client.get("/ui/requests?key=app", headers=SIGNED_IN)
        older = first.text.split("id='older' href='")[1].split("'")[0].replace("&amp;", "&")
        second = await client.get(older, headers=SIGNED_IN)
    assert first.text.count("href='/ui/requests/req-") == 50
    assert "key=app" in older
    assert second.text.count("href='/ui/requests/req-") == 10
    assert "id='older'" not in second.text


async def test_without_a_store_the_list_is_this_process_memory() -> None:
    """No store: the recent requests in memory, filtered by status, and a note that the key
    filter needs a store; a value the form does not offer is ignored."""
    async with client_of(_app(CONFIG)) as client:
        await client.post("/v1/chat/completions", json=chat("gpt-4o"))
        listed = await client.get("/ui/requests?status=2xx&window=1h", headers=SIGNED_IN)
        none = await client.get("/ui/requests?status=5xx", headers=SIGNED_IN)
        odd = await client.get("/ui/requests?status=9xx&before=x", headers=SIGNED_IN)
    assert listed.text.count("href='/ui/requests/") == 1
    assert "the key filter needs a store" in listed.text
    assert "No request matches." in none.text
    assert odd.text.count("href='/ui/requests/") == 1


async def test_a_store_that_fails_leaves_the_list_up_saying_so() -> None:
    """The audit raising: the list says it cannot read the audit now."""
    app = _app(WEIGHTED)
    assert app.dashboard is not None

    async def failing(*_: object) -> dict[str, object]:
        raise TimeoutError

    app.dashboard.search = failing
    async with client_of(app) as client:
        page = await client.get("/ui/requests", headers=SIGNED_IN)
    assert page.status_code == 200
    assert "cannot be read now (TimeoutError)" in page.text
