"""A property of serving from the store: after any sequence of writes through the service
functions, each followed by `committed()`, what is served is what a fresh load would serve."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.gateway._store_support import control_of, file_config
from turnout.config.stored import project_config
from turnout.gateway.resolution.lookups import ProjectLookups
from turnout.gateway.runtime.projects import build_served
from turnout.store import migrate, open_store
from turnout.store import service as svc
from turnout.store.snapshot import load_snapshot

NAMES = ("a", "b", "c")
Op = tuple[str, str, str]  # (action, project, name)
_OPS = st.tuples(
    st.sampled_from(
        ("provider+", "provider-", "route+", "route~", "route-", "key+", "key/", "key-")
    ),
    st.sampled_from(("default", "acme")),
    st.sampled_from(NAMES),
)


def _find(items: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    return next((item for item in items if item["name"] == name), None)


def _apply(store: Any, projects: dict[str, str], op: Op) -> None:
    """One write; writes the service functions refuse (a taken name …) change nothing."""
    action, project, name = op
    pid = projects[project]
    providers = svc.list_objects(store, "provider", pid)
    routes = svc.list_objects(store, "route", pid)
    route = _find(routes, f"r{name}")
    key = _find(svc.list_keys(store, pid), f"k{name}")
    provider = _find(providers, f"p{name}")
    if action == "provider+" and provider is None:
        svc.create_object(store, "provider", pid, {"name": f"p{name}", "kind": "mock"})
    elif action == "provider-" and provider is not None and provider["source"] == "api":
        if not any(t["provider"] == provider["name"] for r in routes for t in r.get("targets", ())):
            svc.delete_object(store, "provider", pid, provider["id"])
    elif action == "route+" and route is None and provider is not None:
        body = {"name": f"r{name}", "models": [f"{project}-{name}"],
                "targets": [{"provider": provider["name"]}]}  # fmt: skip
        svc.create_object(store, "route", pid, body)
    elif action == "route~" and route is not None and route["source"] == "api":
        models = [] if route.get("models") else [f"{project}-{name}"]
        svc.update_object(store, "route", pid, route["id"], {"models": models})
    elif action == "route-" and route is not None and route["source"] == "api":
        svc.delete_object(store, "route", pid, route["id"])
    elif action == "key+" and key is None:
        svc.create_key(store, pid, {"name": f"k{name}"})
    elif action == "key/" and key is not None:
        svc.revoke_key(store, pid, key["id"])
    elif action == "key-" and key is not None:
        svc.delete_key(store, pid, key["id"])


async def _run(folder: Path, ops: list[Op]) -> None:
    store = open_store(f"sqlite:///{folder}/turnout.db")
    migrate(store)
    control = control_of(store, file_config())
    projects = {"default": load_snapshot(store).projects["default"].id}
    projects["acme"] = svc.create_project(store, {"name": "acme"})["id"]
    await control.start(lambda served: None)
    try:
        for op in ops:
            _apply(store, projects, op)
            await control.committed()
            fresh = load_snapshot(store)
            served = control.served
            assert served.version == fresh.version
            rebuilt = build_served(control.file, fresh, lookups=ProjectLookups)
            for name, project in fresh.projects.items():
                runtime = served.runtimes[name]
                assert runtime.config == project_config(control.file, project)
                assert runtime.stored.ids == project.ids
                assert set(runtime.routes) == set(rebuilt.runtimes[name].routes)
                assert len(runtime.keys or ()) == len(rebuilt.runtimes[name].keys or ())
            assert len(served.keys or ()) == len(rebuilt.keys or ())
            for runtime in rebuilt.runtimes.values():
                await runtime.aclose()
    finally:
        await control.aclose()


@settings(max_examples=8, deadline=None)
@given(st.lists(_OPS, min_size=1, max_size=10))
def test_served_runtimes_equal_a_fresh_load_after_every_write(ops: list[Op]) -> None:
    """Any sequence of provider, route and key writes (revocations included), each followed by
    `committed()`, leaves served snapshot, routes and keys equal to a fresh build."""
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(_run(Path(folder), ops))
