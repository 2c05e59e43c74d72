"""Reading the audit and the ledger on both backends: one request's record and attempts, and
usage summed by served provider and model, key, project and day."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest

from tests.store.audit._support import DAY, NOW, submit
from turnout.errors import ConfigError
from turnout.store.keys import create_key
from turnout.store.ledger import AuditWriter
from turnout.store.projects import create_project
from turnout.store.usage import get_request, usage_report

if TYPE_CHECKING:
    from pathlib import Path

    from turnout.store import Store


async def _written(store: Store, tmp_path: Path) -> dict[str, str]:
    """Five requests over two days, two projects, two keys, two served models (one unpriced);
    returns the stored ids of project `default` and its key `app`."""
    project = create_project(store, {"name": "default"})
    key, _ = create_key(store, project["id"], {"name": "app"})
    writer = AuditWriter(store, spill_dir=tmp_path, clock=lambda: NOW)
    day1, day2 = NOW - DAY, NOW
    submit(writer, "a", at=day1, tokens=(100, 10), cost=0.5)
    submit(writer, "b", at=day1, tokens=(200, 20), cost=0.25, key_name="ci")
    submit(writer, "c", at=day2, tokens=(300, 30), cost=1.0)
    submit(writer, "d", at=day2, provider="local", model="llama", tokens=(7, 3), cost=None)
    submit(writer, "e", at=day2, project="other", tokens=(1, 1), cost=0.125)
    await writer.aclose()
    return {"project": project["id"], "key": key["id"]}


async def test_get_request_returns_the_record_and_its_attempts(
    store: Store, tmp_path: Path
) -> None:
    """A stored request reads back whole: caller names and ids, usage, cost, the routing
    record as it was, and its attempt rows in order; an unknown id is None."""
    ids = await _written(store, tmp_path)
    found = get_request(store, "a")
    assert found is not None
    assert (found["project_id"], found["key_id"], found["key_name"]) == (
        ids["project"],
        ids["key"],
        "app",
    )
    assert found["at"] == datetime.fromtimestamp(NOW - DAY, UTC).isoformat().replace("+00:00", "Z")
    assert (found["served_provider"], found["served_model"], found["cost"]) == (
        "openai",
        "gpt-4o-mini",
        0.5,
    )
    assert found["usage"]["input_tokens"] == 100
    assert found["routing"]["request_id"] == "a"
    assert [a["outcome"] for a in found["routing"]["attempts"]] == ["failed", "answered"]
    assert [(a["index"], a["target"], a["outcome"], a["status"]) for a in found["attempts"]] == [
        (1, "backup", "failed", 429),
        (2, "main", "answered", None),
    ]
    assert get_request(store, "nope") is None


async def test_usage_by_served_model_sums_tokens_and_cost(store: Store, tmp_path: Path) -> None:
    """By served provider and model: token sums and cost per model; the unpriced model has
    cost None and counts its unpriced request."""
    await _written(store, tmp_path)
    report = usage_report(store, group_by="model")
    assert [(g["provider"], g["model"], g["requests"]) for g in report] == [
        ("local", "llama", 1),
        ("openai", "gpt-4o-mini", 4),
    ]
    local, openai = report
    assert (local["cost"], local["unpriced_requests"], local["input_tokens"]) == (None, 1, 7)
    assert openai["cost"] == pytest.approx(1.875)
    assert (openai["input_tokens"], openai["output_tokens"]) == (601, 61)


async def test_usage_by_key_project_and_day(store: Store, tmp_path: Path) -> None:
    """By key (its stored id when the store knows it), by project, by UTC day."""
    ids = await _written(store, tmp_path)
    by_key = {
        (g["key_id"], g["key_name"]): g["requests"] for g in usage_report(store, group_by="key")
    }
    assert by_key == {(ids["key"], "app"): 3, (None, "ci"): 1, (None, "app"): 1}
    by_project = {g["project"]: g["cost"] for g in usage_report(store, group_by="project")}
    assert by_project == {"default": pytest.approx(1.75), "other": pytest.approx(0.125)}
    by_day = [(g["day"], g["requests"]) for g in usage_report(store, group_by="day")]
    assert by_day == [
        (datetime.fromtimestamp(NOW - DAY, UTC).date().isoformat(), 2),
        (datetime.fromtimestamp(NOW, UTC).date().isoformat(), 3),
    ]


async def test_usage_filters_by_time_and_project(store: Store, tmp_path: Path) -> None:
    """`since` is inclusive, `until` exclusive, `project_id` keeps one project; groupings
    combine (`day` and `model`)."""
    ids = await _written(store, tmp_path)
    today = datetime.fromtimestamp(NOW, UTC)
    report = usage_report(store, group_by=["day", "model"], since=today, project_id=ids["project"])
    assert [(g["model"], g["requests"]) for g in report] == [("llama", 1), ("gpt-4o-mini", 1)]
    before = usage_report(store, group_by="project", until=today)
    assert [(g["project"], g["requests"]) for g in before] == [("default", 2)]


def test_an_unknown_grouping_names_the_field(store: Store) -> None:
    """`group_by` outside the documented words is a ConfigError naming `group_by`."""
    with pytest.raises(ConfigError, match=r"group_by: 'route' is not a grouping"):
        usage_report(store, group_by="route")
