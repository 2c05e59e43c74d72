"""Which projects this gateway serves, for the admin API's views of live state: every stored
project and the config file's project, each with its id (None for a file-only project) and
its live runtime.

Rule 1: a project without a live runtime (one that fails validation, say) is left out of the
views; the routing test answers 404 for it.
Rule 2: the views of every served project (`served_projects`: health, upstreams) read the live
runtimes alone, never the store, so they answer while the store does not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from turnout.gateway.admin.replies import AdminError
from turnout.gateway.admin.writes import read
from turnout.store import service

if TYPE_CHECKING:
    from turnout.gateway.admin.dispatch import AdminCall
    from turnout.gateway.runtime.live import Runtime

__all__ = ["ServedProject", "file_project", "served_project", "served_projects"]

DEFAULT_PROJECT = "default"


@dataclass(frozen=True, slots=True)
class ServedProject:
    """A project this gateway serves: name, stored id (None: only in the file), runtime."""

    name: str
    id: str | None
    runtime: Runtime


def served_projects(call: AdminCall) -> list[ServedProject]:
    """Rules 1 and 2: every served project, the file's first."""
    runtimes = call.context.served_runtimes()
    first = file_project(call)
    names = [first, *(name for name in runtimes if name != first)]
    return [
        ServedProject(name, runtimes[name].stored.project_id, runtimes[name])
        for name in names
        if name in runtimes
    ]


async def served_project(call: AdminCall, project_id: str | None) -> ServedProject:
    """The project `project_id` names (None: the file's), or 404."""
    if project_id is None:
        name = file_project(call)
        stored = await read(call, service.list_projects)
        found_id = next((row["id"] for row in stored if row["name"] == name), None)
    else:
        name = (await read(call, service.get_project, project_id))["name"]
        found_id = project_id
    runtime = call.context.runtime_for(name)
    if runtime is None:
        why = f"project {name!r} is not served by this gateway (its configuration did not load)"
        raise AdminError(404, "NOT_FOUND", why)
    return ServedProject(name, found_id, runtime)


def file_project(call: AdminCall) -> str:
    """The name of the config file's project (the embedded defaults' without a file)."""
    file = call.context.file_config()
    return file.project if file is not None else DEFAULT_PROJECT
