"""Bringing the config file's providers and routes into the store: stable ids, no secrets, one
transaction, idempotent, file rows the file dropped deleted, names an API object holds refused."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy import select

from turnout.config.load import parse_config
from turnout.errors import ConfigError
from turnout.store import service as svc
from turnout.store.file_sync import sync_file
from turnout.store.models import Provider
from turnout.store.snapshot import load_snapshot

if TYPE_CHECKING:
    from turnout.store import Store


def _file(**extra: Any) -> Any:
    data = {
        "project": "team",
        "providers": [
            {"name": "openai", "kind": "openai", "api_key": "sk-file-secret-123",
             "headers": {"x-org": "org-secret-456"}},
            {"name": "m", "kind": "mock"},
        ],
        "routes": [{"name": "main", "targets": [{"provider": "openai", "model": "gpt-4o"}]}],
        **extra,
    }  # fmt: skip
    return parse_config(data, env={})


def test_file_objects_get_ids_and_hold_no_secret(store: Store) -> None:
    """The project is created; each provider and route gets a prefixed id, `source` file; no
    key or header value reaches the store."""
    report = sync_file(store, _file())
    snapshot = load_snapshot(store).projects["team"]
    assert snapshot.id == report.project_id
    assert snapshot.ids["provider", "openai"].startswith("aip_")
    assert snapshot.ids["route", "main"].startswith("route_")
    assert snapshot.providers == ()  # served from the file, not the store
    with store.sessions() as session:
        rows = list(session.scalars(select(Provider)))
    assert {row.source for row in rows} == {"file"}
    assert all(row.secret is None for row in rows)
    assert "secret" not in repr([row.settings for row in rows])


def test_a_second_sync_of_the_same_file_changes_nothing(store: Store) -> None:
    """Idempotent: the same file again writes nothing and bumps no version; ids stay."""
    sync_file(store, _file())
    version, ids = svc.current_version(store), load_snapshot(store).projects["team"].ids
    report = sync_file(store, _file())
    assert not report.changed
    assert svc.current_version(store) == version
    assert load_snapshot(store).projects["team"].ids == ids


def test_a_changed_file_updates_and_deletes_its_rows(store: Store) -> None:
    """A changed route is updated in place (same id); a provider the file dropped is gone."""
    sync_file(store, _file())
    ids = load_snapshot(store).projects["team"].ids
    changed = _file(routes=[{"name": "main", "targets": [{"provider": "openai", "model": "o3"}]}])
    changed = changed.model_copy(update={"providers": changed.providers[:1]})
    report = sync_file(store, changed)
    after = load_snapshot(store).projects["team"].ids
    assert report.updated == ("route:main",)
    assert report.deleted == ("provider:m",)
    assert after["route", "main"] == ids["route", "main"]
    assert ("provider", "m") not in after


def test_a_name_an_api_object_holds_is_refused_whole(store: Store) -> None:
    """A file route named like a route made through the API: a ConfigError naming the path,
    and nothing of the file written."""
    project = svc.create_project(store, {"name": "team"})
    svc.create_object(store, "provider", project["id"], {"name": "api-m", "kind": "mock"})
    svc.create_object(
        store, "route", project["id"], {"name": "main", "targets": [{"provider": "api-m"}]}
    )
    version = svc.current_version(store)
    with pytest.raises(ConfigError) as caught:
        sync_file(store, _file())
    assert caught.value.errors[0][0] == "routes[0].name"
    assert svc.current_version(store) == version
