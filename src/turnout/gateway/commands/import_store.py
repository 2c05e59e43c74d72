"""`turnout import litellm FILE --into-store (--url URL | --store URL) [--project P]
[--replace]`: a LiteLLM proxy config converted and written into the store, object by object.

Rule 1: the converted providers, routes, bindings and policies are written into the project
(`--project`, by name or id, default `default`; created, by name, when missing) through the
same writes as the admin API (`turnout.gateway.commands.control`), each validated by the same
rules. The file-only sections (`server`, `state`, `defaults`) and caller keys are not stored: a
key can only be stored as one the store generated, so the LiteLLM master key stays a `keys`
entry of the config file (the summary says so).
Rule 2: every `${VAR}` of what is stored is read from the environment now, so a provider's
`api_key` is stored as its value (encrypted by the store); a variable that is not set refuses
the whole import before anything is written, naming each variable and where it is used.
Rule 3: before anything is written, the imported objects are checked by the configuration's
validator; every problem is reported with its path.
Rule 4: an object whose name the project already uses refuses the import, listing every
clash, unless `--replace`: then each is updated to the imported object (fields it lacks are
cleared). A name taken by an object of another kind (a route named like an imported provider)
refuses even with `--replace`.
Rule 5: routes are written without their fallbacks first, then their fallbacks, so routes
that fall back on each other can be written one by one.
Rule 6: the import is all or nothing, and a refused write's error names the imported object it
was writing and each problem with its path. With `--store`, every write (the project's creation
included) is made in one transaction: a write that fails rolls them all back. Through the admin
API (`--url`), where each write commits on its own, the writes already made are undone in
reverse order (objects created are deleted, the project too if the import created it, objects
updated get their fields back); a stored secret the import replaced cannot be read back, so the
error names it as keeping the imported value, and names any undo that failed.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TextIO

import yaml

from turnout.errors import ConfigError
from turnout.gateway.commands.control import (
    ControlError,
    StoreControl,
    find_project,
    open_control,
)
from turnout.store import SECRET_KEY_VARIABLE
from turnout.store.provider_secrets import MASK

if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterator

    from turnout.gateway.commands.control import ControlPlane

__all__ = ["main_import_into_store"]

_STORED: Final = ("providers", "routes", "bindings", "policies")
_SHARED_NAMES: Final = frozenset({"providers", "routes"})
_READ_ONLY: Final = frozenset(
    {"id", "project_id", "kind", "name", "source", "created_at", "updated_at"}
)
_STAMPS: Final = frozenset({"id", "project_id", "source", "created_at", "updated_at"})
_PREFIX: Final = "turnout import litellm"


@dataclass(slots=True)
class _Counts:
    created: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_STORED, 0))
    updated: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_STORED, 0))


def main_import_into_store(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run `turnout import litellm FILE --into-store …`; returns the exit status."""
    out = out if out is not None else sys.stdout
    try:
        sections, notes, left_out = _converted(args.file)
        control = open_control(args)
        try:
            project, counts = _load(control, args, sections)
        finally:
            control.close()
    except ControlError as exc:
        sys.stderr.write(f"{_PREFIX}: {exc}\n")
        return 1
    out.write(_summary(project, control.where, counts, notes, left_out))
    return 0


def _converted(path: str) -> tuple[dict[str, list[dict[str, Any]]], list[str], list[str]]:
    """Rules 2 and 3: the stored sections with their variables read, the importer's notes, and
    the sections left out."""
    from turnout.config.litellm import convert_litellm  # noqa: PLC0415
    from turnout.config.load import expand_env, parse_config  # noqa: PLC0415

    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ControlError(f"cannot read {path}: {exc.strerror}") from None
    try:
        result = convert_litellm(text)
    except ConfigError as exc:
        raise ControlError(f"{path}: {exc}") from None
    document = yaml.safe_load(result.yaml) or {}
    left_out = [name for name in document if name not in _STORED]
    raw = {name: list(document.get(name) or ()) for name in _STORED}
    errors: list[tuple[str, str]] = []
    sections = expand_env(raw, os.environ, errors)
    if errors:
        listed = "\n".join(f"  {where}: {message}" for where, message in errors)
        raise ControlError(
            "the converted configuration reads environment variables that are not set; set "
            "them and import again (their values are stored, provider keys encrypted):\n" + listed
        )
    try:
        parse_config({"project": "import", **sections}, env={})
    except ConfigError as exc:
        listed = "\n".join(f"  {where}: {message}" for where, message in exc.errors)
        raise ControlError(f"the imported objects are not valid:\n{listed}") from None
    return sections, result.notes, left_out


def _load(
    control: ControlPlane, args: argparse.Namespace, sections: dict[str, list[dict[str, Any]]]
) -> tuple[dict[str, Any], _Counts]:
    """Rules 1 and 6."""
    if (
        isinstance(control, StoreControl)
        and not control.store.secrets.has_key
        and any(body.get("api_key") for body in sections["providers"])
    ):
        raise ControlError(
            f"{SECRET_KEY_VARIABLE} is not set: it is needed to store the providers' api_key "
            "(set it as the gateway has it); nothing was written"
        )
    project = find_project(control, args.project)
    if project is None and args.project.startswith("proj_"):
        raise ControlError(f"--project: no project with the id {args.project!r}")
    undo = _Undo(project_id=project["id"] if project is not None else "")
    try:
        if isinstance(control, StoreControl):
            with control.one_transaction():
                return _import(control, args, sections, project, undo)
        return _import(control, args, sections, project, undo)
    except ControlError as exc:
        if isinstance(control, StoreControl) or not (undo.steps or undo.created_project):
            raise ControlError(f"{exc}\n(the import stopped there; nothing was written)") from None
        raise ControlError(f"{exc}\n{undo.run(control)}") from None


def _import(
    control: ControlPlane,
    args: argparse.Namespace,
    sections: dict[str, list[dict[str, Any]]],
    project: dict[str, Any] | None,
    undo: _Undo,
) -> tuple[dict[str, Any], _Counts]:
    """Rules 1, 4 and 5, each write noted in `undo` with what reverses it."""
    if project is None:
        project = control.create_project(args.project)
        project["created"] = True
        undo.project_id, undo.created_project = project["id"], True
        existing: dict[str, list[dict[str, Any]]] = {plural: [] for plural in _STORED}
    else:
        existing = {plural: control.list(plural, project["id"]) for plural in _STORED}
    pid = project["id"]
    matches = _clashes(existing, sections, replace=args.replace)
    counts = _Counts()
    ids: dict[tuple[str, str], str] = {}

    def put(plural: str, index: int, body: dict[str, Any]) -> None:
        key = (plural, body["name"].lower())
        found = matches.get(key)
        with _naming(f"{plural[:-1]} {body['name']!r} ({plural}[{index}] of the import)"):
            if found is None:
                ids[key] = control.create(plural, pid, body)["id"]
                undo.steps.append((plural, ids[key], None))
                counts.created[plural] += 1
                return
            stale = set(found) - _READ_ONLY - set(body)
            patch = body | dict.fromkeys(stale)
            control.update(plural, pid, found["id"], patch)
        ids[key] = found["id"]
        undo.steps.append((plural, found["id"], _restoring(found, patch, undo)))
        counts.updated[plural] += 1

    for index, body in enumerate(sections["providers"]):
        put("providers", index, body)
    for index, body in enumerate(sections["routes"]):
        put("routes", index, {k: v for k, v in body.items() if k != "fallbacks"})
    for index, body in enumerate(sections["routes"]):
        if body.get("fallbacks"):
            route_id = ids["routes", body["name"].lower()]
            with _naming(f"route {body['name']!r} (routes[{index}].fallbacks of the import)"):
                control.update("routes", pid, route_id, {"fallbacks": body["fallbacks"]})
            undo.steps.append(("routes", route_id, {"fallbacks": None}))
    for plural in ("bindings", "policies"):
        for index, body in enumerate(sections[plural]):
            put(plural, index, body)
    return project, counts


@contextmanager
def _naming(what: str) -> Iterator[None]:
    """Rule 6: a refused write's error, naming the imported object it was writing."""
    try:
        yield
    except ControlError as exc:
        raise ControlError(f"writing {what} failed: {exc}") from None


def _restoring(found: dict[str, Any], patch: dict[str, Any], undo: _Undo) -> dict[str, Any]:
    """The patch that gives an updated object its fields back. A stored secret reads masked and
    cannot be sent back: when the import replaced one, undoing leaves the imported one."""
    restore = {name: found.get(name) for name in (set(patch) | set(found)) - _STAMPS}
    for name, value in list(restore.items()):
        if value == MASK:
            del restore[name]
            if patch.get(name) is not None:
                undo.kept_secrets.append(f"{found['name']}.{name}")
    return restore


@dataclass(slots=True)
class _Undo:
    """Rule 6, through the admin API: the writes made so far, each with what reverses it (a
    patch, or None: delete the object)."""

    project_id: str = ""
    created_project: bool = False
    steps: list[tuple[str, str, dict[str, Any] | None]] = field(default_factory=list)
    kept_secrets: list[str] = field(default_factory=list)

    def run(self, control: ControlPlane) -> str:
        """Reverse the writes, newest first; returns what it did."""
        steps = self.steps
        if self.created_project:  # deleting the new project deletes all it holds
            steps = [("projects", self.project_id, None)]
        failed: list[str] = []
        for plural, object_id, patch in reversed(steps):
            try:
                if plural == "projects":
                    control.delete_project(object_id)
                elif patch is None:
                    control.delete(plural, self.project_id, object_id)
                else:
                    control.update(plural, self.project_id, object_id, patch)
            except ControlError as exc:
                failed.append(f"  {plural[:-1]} {object_id}: {exc}")
        head = f"(the import stopped there, after {len(self.steps)} writes"
        if failed:
            listed = "\n".join(failed)
            return f"{head}; undoing them failed for these objects:\n{listed})"
        kept = ""
        if self.kept_secrets:
            kept = (
                "; these stored secrets keep the imported value (a stored secret cannot be "
                f"read back to restore it): {', '.join(self.kept_secrets)}"
            )
        return f"{head}; they were undone{kept})"


def _clashes(
    existing: dict[str, list[dict[str, Any]]],
    sections: dict[str, list[dict[str, Any]]],
    *,
    replace: bool,
) -> dict[tuple[str, str], dict[str, Any]]:
    """Rule 4: the existing object each imported one replaces, by `(plural, lower name)`."""
    same: dict[tuple[str, str], dict[str, Any]] = {}
    other: list[str] = []
    for plural in _STORED:
        for body in sections[plural]:
            name = body["name"].lower()
            kinds = _SHARED_NAMES if plural in _SHARED_NAMES else {plural}
            for kind in kinds:
                for found in existing[kind]:
                    if found["name"].lower() != name:
                        continue
                    if kind == plural:
                        same[plural, name] = found
                    else:
                        other.append(
                            f"  {plural[:-1]} {body['name']!r}: the project has a {kind[:-1]} "
                            f"of that name ({found['id']})"
                        )
    if other:
        raise ControlError(
            "names already used by objects of another kind (rename or delete them; --replace "
            "only replaces objects of the same kind):\n" + "\n".join(other)
        )
    if same and not replace:
        listed = "\n".join(
            f"  {plural[:-1]} {found['name']!r} ({found['id']})"
            for (plural, _), found in same.items()
        )
        raise ControlError(
            "the project already has objects with these names; nothing was written (import "
            "again with --replace to update them):\n" + listed
        )
    return same


def _summary(
    project: dict[str, Any],
    where: str,
    counts: _Counts,
    notes: list[str],
    left_out: list[str],
) -> str:
    made = " (created)" if project.get("created") else ""
    lines = [f"imported into project {project['name']} ({project['id']}){made} in {where}:"]
    for plural in _STORED:
        created, updated = counts.created[plural], counts.updated[plural]
        if created or updated:
            lines.append(f"  {plural}: {created} created, {updated} updated")
    if "keys" in left_out:
        lines.append(
            "not stored: keys (the store keeps only keys it generated: keep the imported "
            "keys entries, with their ${VAR}, in the config file, or create new keys with "
            "`turnout keys create --url/--store`)"
        )
    rest = [name for name in left_out if name != "keys"]
    if rest:
        lines.append(f"not stored: {', '.join(rest)} (config file settings: put them there)")
    lines.extend(f"note: {note}" for note in notes)
    return "\n".join(lines) + "\n"
