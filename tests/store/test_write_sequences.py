"""A property of the store on both backends: any sequence of writes leaves the version strictly
increasing and the listed objects equal to what was written."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnout.errors import NameTaken
from turnout.store import service as svc

if TYPE_CHECKING:
    from turnout.store import Store

_NAMES = st.sampled_from(["a", "b", "c", "A"])
_WRITES = st.lists(
    st.tuples(st.sampled_from(["create", "update", "delete"]), _NAMES, st.booleans()),
    max_size=12,
)


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(writes=_WRITES)
def test_writes_keep_version_increasing_and_lists_exact(
    store: Store, writes: list[tuple[str, str, bool]]
) -> None:
    """Random creates, patches and deletes of routes: versions grow, lists match a model."""
    project_id = str(svc.create_project(store, {"name": uuid.uuid4().hex})["id"])
    expected: dict[str, dict[str, Any]] = {}
    version = svc.current_version(store)
    for action, name, enabled in writes:
        existing = next((i for i, r in expected.items() if r["name"].lower() == name.lower()), None)
        wrote = True
        if action == "create":
            body = {"name": name, "enabled": enabled, "targets": [{"provider": "p", "model": "m"}]}
            try:
                route = svc.create_object(store, "route", project_id, body)
            except NameTaken:
                assert existing is not None
                wrote = False
            else:
                expected[route["id"]] = route
        elif existing is None:
            wrote = False
        elif action == "update":
            patch = {"enabled": enabled}
            expected[existing] = svc.update_object(store, "route", project_id, existing, patch)
        else:
            svc.delete_object(store, "route", project_id, existing)
            del expected[existing]
        now = svc.current_version(store)
        assert now > version if wrote else now == version
        version = now
    listed = svc.list_objects(store, "route", project_id)
    assert {r["id"]: r for r in listed} == expected
