"""A project's configuration as served: the config file's objects and the store's, together.

Rule 1: the config file's project is served from the file plus what the admin API stored in the
project of the same name; any other stored project is served from the store alone, with the
file's `server`, `state`, `defaults` and `catalog_file`.
Rule 2: the result is checked by the same validator as the file (`check_config`), so a stored
object that clashes with a file object (a name, an overlapping pattern) is refused alike; the
project's stored default route is what its consumers without an assignment inherit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from turnout.config.rules import check_config
from turnout.schema import FileConfig

if TYPE_CHECKING:
    from turnout.store.snapshot import ProjectSnapshot

__all__ = ["project_config", "project_problems"]


def project_config(file: FileConfig | None, project: ProjectSnapshot) -> FileConfig:
    """The configuration that serves `project`: Rule 1 (no validation here)."""
    base = file if file is not None else FileConfig()
    if file is None or project.name != file.project:
        base = FileConfig(
            project=project.name,
            server=base.server,
            state=base.state,
            defaults=base.defaults,
            catalog_file=base.catalog_file,
        )
    stored = {
        "providers": project.providers,
        "routes": project.routes,
        "keys": project.keys,
        "bindings": project.bindings,
        "policies": project.policies,
        "consumers": project.consumers,
    }
    # Only sections the store adds to are touched: a section counts as set once updated.
    update = {name: (*getattr(base, name), *items) for name, items in stored.items() if items}
    if not update:  # the configuration itself, which the validator may have accepted already
        return base
    return base.model_copy(update=update)


def project_problems(file: FileConfig | None, project: ProjectSnapshot) -> list[tuple[str, str]]:
    """Rule 2: every violation of the served configuration of `project`, as `(path, message)`."""
    served = project_config(file, project)
    return list(check_config(served, default_route=project.default_route))
