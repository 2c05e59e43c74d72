"""The request audit and the usage ledger through the admin API, over real HTTP on SQLite and
PostgreSQL: one request read back whole, usage summed on what served, and the filters."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

import httpx

from tests.gateway.admin._support import HEADERS, StoreContext, error_of, file_config, running
from tests.store.audit._support import DAY, NOW, submit
from turnout.store.ledger import AuditWriter

if TYPE_CHECKING:
    from pathlib import Path

    from turnout.store import Store


async def test_an_audited_request_and_usage_read_back(store: Store, tmp_path: Path) -> None:
    """A request reads back with its routing record and attempts (404 for an unknown one);
    usage sums by served provider and model, by day within `since`; a bad filter is 400
    naming it."""
    writer = AuditWriter(store, spill_dir=tmp_path, clock=lambda: NOW)
    submit(writer, "req-a", at=NOW - DAY, tokens=(100, 10), cost=0.5)
    submit(writer, "req-b", at=NOW, provider="local", model="llama", tokens=(7, 3), cost=None)
    await writer.aclose()
    async with (
        running(StoreContext(store, file_config())) as url,
        httpx.AsyncClient(base_url=f"{url}/admin/v1", headers=HEADERS) as admin,
    ):
        found = (await admin.get("/requests/req-a")).json()
        assert found["routing"]["request_id"] == "req-a"
        assert [a["outcome"] for a in found["attempts"]] == ["failed", "answered"]
        unknown = await admin.get("/requests/nope")
        assert unknown.status_code == 404
        assert error_of(unknown)["code"] == "NOT_FOUND"
        by_model = (await admin.get("/usage")).json()["data"]
        assert [(row["provider"], row["model"], row["cost"]) for row in by_model] == [
            ("local", "llama", None),
            ("openai", "gpt-4o-mini", 0.5),
        ]
        since = datetime.fromtimestamp(NOW - 3600, UTC).isoformat()
        today = (await admin.get("/usage", params={"group_by": "day", "since": since})).json()
        assert [(row["requests"], row["input_tokens"]) for row in today["data"]] == [(1, 7)]
        for query, name in (("group_by=route", "group_by"), ("since=yesterday", "since")):
            refused = await admin.get(f"/usage?{query}")
            assert refused.status_code == 400
            assert error_of(refused)["meta"]["errors"][0]["path"] == name
