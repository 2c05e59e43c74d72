"""The project and key ids an audit row or usage entry is written with, by the names it holds.

A row names what the caller's configuration named (project, key name); its ids are looked up
when it is written. A name the store does not know leaves the id empty.

Rule 1: ids found are remembered; a name not found is asked again next time (the object may
be created meanwhile). The writer forgets them all now and then (objects renamed or deleted).
Rule 2: the look-ups go through a `Lookup` of the backend's driver, so this module loads no
database library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

__all__ = ["Ids", "IdsByName", "Lookup", "Names"]

Names = tuple[str | None, str | None]
"""A row's project and key name."""
Ids = tuple[str | None, str | None]
"""The project id and key id of a row's names."""


class Lookup(Protocol):
    """Rule 2: the ids of names, as (name, id) pairs; names not found are left out."""

    def projects(self, names: Sequence[str]) -> Sequence[tuple[str, str]]: ...

    def keys(self, project_id: str, names: Sequence[str]) -> Sequence[tuple[str, str]]: ...


class IdsByName:
    """Project and key ids by name (Rule 1)."""

    def __init__(self) -> None:
        self._projects: dict[str, str] = {}
        self._keys: dict[tuple[str, str], str] = {}

    def of(self, lookup: Lookup, names: Iterable[Names]) -> dict[Names, Ids]:
        """The ids of each (project, key name) in `names`, looked up when not known yet."""
        names = set(names)
        self._look_up(lookup, names)
        ids: dict[Names, Ids] = {}
        for project, key_name in names:
            project_id = self._projects.get(project or "")
            key_id = self._keys.get((project_id, key_name)) if project_id and key_name else None
            ids[project, key_name] = (project_id, key_id)
        return ids

    def _look_up(self, lookup: Lookup, names: set[Names]) -> None:
        projects = {project for project, _ in names if project} - self._projects.keys()
        if projects:
            self._projects.update(lookup.projects(sorted(projects)))
        wanted: dict[str, set[str]] = {}
        for project, key_name in names:
            project_id = self._projects.get(project or "")
            if project_id and key_name and (project_id, key_name) not in self._keys:
                wanted.setdefault(project_id, set()).add(key_name)
        for project_id, key_names in wanted.items():
            found = lookup.keys(project_id, sorted(key_names))
            self._keys.update({(project_id, name): id_ for name, id_ in found})
