"""The dashboard's project selector, the replica named on every page, and the test-routing
form without JavaScript."""

from __future__ import annotations

import functools
import os
import socket
import time
from typing import TYPE_CHECKING

import httpx

from tests.gateway._app_support import client_of, runtime_of
from tests.gateway.ui.test_dashboard_http import CONFIG
from tests.gateway.ui.test_route_page import SIGNED_IN, WEIGHTED, _app, _audit
from tests.store.audit._support import finished, record
from turnout.access.keys import hash_key
from turnout.gateway.observe.activity import Activity
from turnout.gateway.server.audit import _spend
from turnout.gateway.ui.app import Dashboard

from .test_dashboard_http import ADMIN

if TYPE_CHECKING:
    from pathlib import Path

    from turnout.store import Store


def _two_projects() -> Dashboard:
    runtimes = {"default": runtime_of(CONFIG), "team-b": runtime_of(WEIGHTED)}
    return Dashboard(
        runtimes=lambda: runtimes,
        admin_hashes=lambda: frozenset({hash_key(ADMIN)}),
        activity=Activity(),
    )


async def _get(dashboard: Dashboard, path: str) -> httpx.Response:
    transport = httpx.ASGITransport(app=dashboard)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
        return await client.get(path, headers=SIGNED_IN)


async def test_the_selector_shows_one_project_and_its_parts_keep_to_it() -> None:
    """With two projects the page offers a selector; `?project=team-b` shows that project's
    routes alone, and its refreshing parts ask for that project again; a project this replica
    does not serve shows every project."""
    dashboard = _two_projects()
    every = await _get(dashboard, "/ui")
    one = await _get(dashboard, "/ui?project=team-b")
    part = await _get(dashboard, "/ui/part/routes?project=team-b")
    unknown = await _get(dashboard, "/ui?project=nope")
    assert "<select name='project'>" in every.text
    assert "/ui/routes/main" in every.text
    assert "/ui/routes/split" in every.text
    assert "<option value='team-b' selected>" in one.text
    assert "/ui/routes/split" in one.text
    assert "/ui/routes/main" not in one.text
    assert "hx-get='/ui/part/routes?project=team-b'" in one.text
    assert "/ui/routes/main" not in part.text
    assert "/ui/routes/main" in unknown.text


async def test_every_page_names_the_replica_serving_it() -> None:
    """The dashboard, the request list and a route page each name this host and process."""
    name = f"replica {socket.gethostname()} · pid {os.getpid()}"
    async with client_of(_app(CONFIG)) as client:
        for path in ("/ui", "/ui/requests", "/ui/routes/main"):
            page = await client.get(path, headers=SIGNED_IN)
            assert name in page.text, path


async def test_the_test_routing_form_answers_without_javascript() -> None:
    """The form posts to a page of its own when no script intercepts it: the route and its
    targets, or the refusal, with a way back."""
    async with client_of(_app(CONFIG)) as client:
        home = await client.get("/ui", headers=SIGNED_IN)
        found = await client.post("/ui/test", data={"model": "gpt-4o"}, headers=SIGNED_IN)
        empty = await client.post("/ui/test", data={"model": ""}, headers=SIGNED_IN)
    assert "method='post' action='/ui/test'" in home.text
    assert found.status_code == 200
    assert "<strong>main</strong>" in found.text
    assert "href='/ui'" in found.text
    assert "give a model to test" in empty.text


async def test_spend_per_project_and_key_from_the_ledger(store: Store, tmp_path: Path) -> None:
    """With a store the dashboard's spend card loads its figures as a part: per project and per
    key, the most expensive key first; kept to a chosen project; once read, the page shows them
    at once; without JavaScript, a page of their own."""
    app = _app(WEIGHTED)
    assert app.dashboard is not None
    app.dashboard.spend = functools.partial(_spend, store)
    requests = [
        finished(record(f"a{n}", cost=0.01), key_name="app", at=time.time()) for n in range(3)
    ]
    requests.append(finished(record("o1", cost=0.05), key_name="ops", at=time.time()))
    requests.append(
        finished(record("b1", cost=1.0), project="team-b", key_name="batch", at=time.time())
    )
    await _audit(store, tmp_path, requests)
    async with client_of(app) as client:
        first = await client.get("/ui", headers=SIGNED_IN)
        part = await client.get("/ui/part/spend", headers=SIGNED_IN)
        again = await client.get("/ui", headers=SIGNED_IN)
        chosen = await client.get("/ui/part/spend?project=default", headers=SIGNED_IN)
        plain = await client.get("/ui/spend", headers=SIGNED_IN)
    assert "hx-get='/ui/part/spend' hx-trigger='load'" in first.text
    assert "href='/ui/spend'" in first.text
    projects = part.text[part.text.index("spend-projects") : part.text.index("spend-keys")]
    assert "<td>default</td><td class='num'>4</td>" in projects
    assert "$0.0800" in projects
    keys = part.text[part.text.index("spend-keys") :]
    assert keys.index("<td>batch</td>") < keys.index("<td>ops</td>") < keys.index("<td>app</td>")
    assert "spend-keys" in again.text  # read a moment ago: on the page at once
    assert "team-b" not in chosen.text
    assert "Back to the dashboard" in plain.text
    assert "spend-keys" in plain.text


async def test_a_ledger_that_fails_leaves_the_spend_card_saying_so() -> None:
    """The ledger raising: the card says it cannot be read now, and the page is up."""
    app = _app(WEIGHTED)
    assert app.dashboard is not None

    async def failing() -> dict[str, object]:
        raise TimeoutError

    app.dashboard.spend = failing
    async with client_of(app) as client:
        page = await client.get("/ui", headers=SIGNED_IN)
        part = await client.get("/ui/part/spend", headers=SIGNED_IN)
    assert page.status_code == 200
    assert "The usage ledger cannot be read now (TimeoutError)" in part.text
