"""Helpers of the gateway suites that serve from the store: a control plane over a store and a
file configuration, an app started through its lifespan, a change feed the test drives, and
stored consumers (written as the admin API will write them: audited, version bumped)."""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from turnout.config.load import parse_config
from turnout.gateway.resolution.lookups import ProjectLookups
from turnout.gateway.runtime.control import ControlPlane
from turnout.gateway.server.app import GatewayApp
from turnout.gateway.server.lifespan import Lifespan
from turnout.store._writes import audit, write
from turnout.store.file_sync import sync_file
from turnout.store.ids import new_id
from turnout.store.models import Consumer

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from turnout.store import Store

USER = [{"role": "user", "content": "hi"}]


class HeldFeed:
    """A change feed that never wakes by itself: refreshes come from `committed()` only."""

    def __init__(self) -> None:
        self.announced: list[int] = []

    async def wait(self) -> None:
        await asyncio.Event().wait()

    async def announce(self, version: int) -> None:
        self.announced.append(version)

    async def aclose(self) -> None:
        return None


def file_config(**extra: Any) -> dict[str, Any]:
    """A file with one mock provider `m` and one route `main` (keys auth, key `file-key`)."""
    return {
        "project": "default",
        "providers": [{"name": "m", "kind": "mock"}],
        "routes": [{"name": "main", "models": ["gpt-4o-mini"], "targets": [{"provider": "m"}]}],
        "keys": [{"name": "file", "key": "file-key-0123456789"}],
        **extra,
    }


def control_of(store: Store, config: dict[str, Any]) -> ControlPlane:
    """A control plane over `store` serving `config` (synced first), on a held feed."""
    file = parse_config(config, env={})
    sync_file(store, file)
    return ControlPlane(store, file, lookups=ProjectLookups, feed=HeldFeed())


@asynccontextmanager
async def started(control: ControlPlane) -> AsyncIterator[GatewayApp]:
    """An app serving from `control`, through its lifespan (startup loads, shutdown closes)."""
    app = GatewayApp(control=control)
    lifespan = Lifespan(app)
    await lifespan.startup()
    try:
        yield app
    finally:
        await lifespan.shutdown()


def add_consumer(store: Store, project_id: str, name: str, kind: str, **fields: Any) -> str:
    """Store a consumer (`model_route_id`, `ai_provider_id`, `model`, `agent_id`); its id."""
    with write(store) as session:
        row = Consumer(id=new_id(kind), project_id=project_id, name=name, kind=kind, **fields)
        session.add(row)
        session.flush()
        audit(session, actor=None, action="create", kind="consumer", object_id=row.id,
              project_id=project_id, before=None, after={"name": name})  # fmt: skip
        return row.id


def chat(model: str = "gpt-4o-mini") -> dict[str, Any]:
    """An OpenAI Chat Completions body."""
    return {"model": model, "messages": USER}
