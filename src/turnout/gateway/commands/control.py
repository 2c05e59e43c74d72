"""The control plane as the command line reaches it: a running gateway's admin API (`--url`)
or a store opened directly (`--store`), behind one small interface (`ControlPlane`).

Rule 1: both ways run the same writes: the admin API's endpoints, or the store's service
functions that those endpoints call, each with `actor` `cli` and a `validate` hook running the
project's validator (`project_problems`, without a config file) on the store path.
Rule 2: every failure is a `ControlError` whose message names what was wrong (the project, the
object, each validation problem with its path); the admin key never appears in one.
Rule 3: `--project` takes a project's id or its name; a name is looked up among the projects.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final, Protocol

from turnout.errors import ConfigError, TurnoutError

if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterator

    from turnout.store import Store
    from turnout.store.snapshot import ProjectSnapshot

__all__ = [
    "ACTOR",
    "ADMIN_KEY_VARIABLE",
    "ApiControl",
    "ControlError",
    "ControlPlane",
    "StoreControl",
    "add_target_arguments",
    "open_control",
]

ACTOR: Final = "cli"
"""The actor the store's audit records for a write made with `--store`."""
ADMIN_KEY_VARIABLE: Final = "TURNOUT_ADMIN_KEY"


class ControlError(Exception):
    """A command failed; the message says what was wrong (Rule 2)."""


class ControlPlane(Protocol):
    """What the commands need of the control plane (Rule 1)."""

    where: str

    def projects(self) -> list[dict[str, Any]]: ...
    def create_project(self, name: str) -> dict[str, Any]: ...
    def list(self, plural: str, project_id: str) -> list[dict[str, Any]]: ...
    def create(self, plural: str, project_id: str, body: dict[str, Any]) -> dict[str, Any]: ...
    def update(
        self, plural: str, project_id: str, object_id: str, patch: dict[str, Any]
    ) -> dict[str, Any]: ...
    def delete(self, plural: str, project_id: str, object_id: str) -> None: ...
    def delete_project(self, project_id: str) -> None: ...
    def revoke_key(self, project_id: str, key_id: str) -> dict[str, Any]: ...
    def close(self) -> None: ...


def add_target_arguments(parser: argparse.ArgumentParser) -> None:
    """`--url`, `--admin-key`, `--store`, `--project` and `--timeout`."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--url", help="a running gateway, through its admin API")
    where.add_argument(
        "--store", metavar="URL", help="a store directly: sqlite:///PATH or postgresql://…"
    )
    parser.add_argument(
        "--admin-key", help=f"the admin key for --url (default: ${ADMIN_KEY_VARIABLE})"
    )
    parser.add_argument(
        "--project",
        default="default",
        metavar="NAME_OR_ID",
        help="the project, by name or id (default: the project named 'default')",
    )
    parser.add_argument(
        "--timeout", type=float, default=10.0, help="seconds to wait for the gateway (10)"
    )


def open_control(args: argparse.Namespace) -> ControlPlane:
    """The control plane `--url` or `--store` names (one of them is set)."""
    if args.url:
        key = args.admin_key or os.environ.get(ADMIN_KEY_VARIABLE)
        if not key:
            raise ControlError(f"--url needs an admin key: --admin-key or {ADMIN_KEY_VARIABLE}")
        return ApiControl(args.url, key, args.timeout)
    return StoreControl.open(args.store)


def find_project(control: ControlPlane, wanted: str) -> dict[str, Any] | None:
    """Rule 3: the project whose id, else whose name, is `wanted`; None when none is."""
    projects = control.projects()
    for project in projects:
        if project["id"] == wanted:
            return project
    for project in projects:
        if project["name"] == wanted:
            return project
    return None


def require_project(control: ControlPlane, wanted: str) -> dict[str, Any]:
    """`find_project`, or a `ControlError` naming the project and where it was looked for."""
    project = find_project(control, wanted)
    if project is None:
        raise ControlError(
            f"--project: no project with the id or name {wanted!r} in {control.where} (make "
            "one with POST /admin/v1/projects, or by importing a config into it)"
        )
    return project


# ---- the store, directly -------------------------------------------------------------------


class StoreControl:
    """Rule 1: the store's service functions, on a store opened and migrated here."""

    def __init__(self, store: Store, where: str) -> None:
        self.store = store
        self.where = where

    @classmethod
    def open(cls, url: str) -> StoreControl:
        """Open and migrate the store at `url`."""
        from turnout.store import migrate, open_store  # noqa: PLC0415 - only with --store

        shown = _shown_url(url)
        try:
            store = open_store(url)
            migrate(store)
        except ConfigError as exc:
            raise ControlError(f"--store {shown}: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - the database's own error, named
            raise ControlError(
                f"--store {shown}: cannot open the store ({type(exc).__name__}: {exc})"
            ) from None
        return cls(store, f"the store at {shown}")

    def projects(self) -> list[dict[str, Any]]:
        from turnout.store import service  # noqa: PLC0415

        return service.list_projects(self.store)

    def create_project(self, name: str) -> dict[str, Any]:
        from turnout.store import service  # noqa: PLC0415

        with self._named():
            return service.create_project(self.store, {"name": name}, actor=ACTOR)

    def list(self, plural: str, project_id: str) -> list[dict[str, Any]]:
        from turnout.store import service  # noqa: PLC0415

        with self._named():
            if plural == "keys":
                return service.list_keys(self.store, project_id)
            return service.list_objects(self.store, _KINDS[plural], project_id)

    def create(self, plural: str, project_id: str, body: dict[str, Any]) -> dict[str, Any]:
        from turnout.store import service  # noqa: PLC0415

        with self._named():
            if plural == "keys":
                stored, plaintext = service.create_key(
                    self.store, project_id, body, actor=ACTOR, validate=_validate
                )
                return {**stored, "key": plaintext}
            return service.create_object(
                self.store, _KINDS[plural], project_id, body, actor=ACTOR, validate=_validate
            )

    def update(
        self, plural: str, project_id: str, object_id: str, patch: dict[str, Any]
    ) -> dict[str, Any]:
        from turnout.store import service  # noqa: PLC0415

        with self._named():
            return service.update_object(
                self.store, _KINDS[plural], project_id, object_id, patch,
                actor=ACTOR, validate=_validate,
            )  # fmt: skip

    def delete(self, plural: str, project_id: str, object_id: str) -> None:
        from turnout.store import service  # noqa: PLC0415

        with self._named():
            service.delete_object(
                self.store, _KINDS[plural], project_id, object_id, actor=ACTOR, validate=_validate
            )

    def delete_project(self, project_id: str) -> None:
        from turnout.store import service  # noqa: PLC0415

        with self._named():
            service.delete_project(self.store, project_id, actor=ACTOR)

    @contextmanager
    def one_transaction(self) -> Iterator[None]:
        """Every write in this block commits together when it ends, or none does."""
        from turnout.store import service  # noqa: PLC0415

        with self._named(), service.one_transaction(self.store):
            yield

    def revoke_key(self, project_id: str, key_id: str) -> dict[str, Any]:
        from turnout.store import service  # noqa: PLC0415

        with self._named():
            return service.revoke_key(
                self.store, project_id, key_id, actor=ACTOR, validate=_validate
            )

    def close(self) -> None:
        self.store.close()

    @staticmethod
    @contextmanager
    def _named() -> Iterator[None]:
        """Rule 2: the store's errors as `ControlError`s."""
        try:
            yield
        except TurnoutError as exc:
            raise ControlError(_problems(str(exc), getattr(exc, "errors", ()))) from None


_KINDS: Final[dict[str, Any]] = {
    "providers": "provider",
    "routes": "route",
    "bindings": "binding",
    "policies": "policy",
}


def _validate(snapshot: ProjectSnapshot) -> None:
    """Rule 1: the project as the write leaves it must pass the validator."""
    from turnout.config.stored import project_problems  # noqa: PLC0415

    problems = project_problems(None, snapshot)
    if problems:
        listed = "; ".join(f"{path}: {message}" for path, message in problems)
        raise ConfigError(f"the project's configuration would be invalid: {listed}", problems)


def _problems(message: str, errors: Any) -> str:
    lines = [f"  {path}: {problem}" for path, problem in errors or ()]
    head = message.split(": ", 1)[0] if lines else message
    return "\n".join([head, *lines]) if lines else message


def _shown_url(url: str) -> str:
    """The store URL without its password."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "(unparsable URL)"
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


# ---- a running gateway's admin API ---------------------------------------------------------


class ApiControl:
    """Rule 1: the admin API of the gateway at `url`, with an admin key as Bearer."""

    def __init__(self, url: str, key: str, timeout: float) -> None:
        self._base = url.rstrip("/") + "/admin/v1"
        self._key = key
        self._timeout = timeout
        self.where = f"the gateway at {url.rstrip('/')}"

    def projects(self) -> list[dict[str, Any]]:
        return list(self._call("GET", "/projects")["data"])

    def create_project(self, name: str) -> dict[str, Any]:
        return self._call("POST", "/projects", {"name": name})

    def list(self, plural: str, project_id: str) -> list[dict[str, Any]]:
        return list(self._call("GET", f"{_at(project_id)}/{plural}")["data"])

    def create(self, plural: str, project_id: str, body: dict[str, Any]) -> dict[str, Any]:
        return self._call("POST", f"{_at(project_id)}/{plural}", body)

    def update(
        self, plural: str, project_id: str, object_id: str, patch: dict[str, Any]
    ) -> dict[str, Any]:
        path = f"{_at(project_id)}/{plural}/{urllib.parse.quote(object_id, safe='')}"
        return self._call("PATCH", path, patch)

    def delete(self, plural: str, project_id: str, object_id: str) -> None:
        self._call("DELETE", f"{_at(project_id)}/{plural}/{urllib.parse.quote(object_id, safe='')}")

    def delete_project(self, project_id: str) -> None:
        self._call("DELETE", _at(project_id))

    def revoke_key(self, project_id: str, key_id: str) -> dict[str, Any]:
        path = f"{_at(project_id)}/keys/{urllib.parse.quote(key_id, safe='')}/revoke"
        return self._call("POST", path)

    def close(self) -> None:
        return None

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        url = self._base + path
        data = None if body is None else json.dumps(body).encode()
        headers = {"authorization": f"Bearer {self._key}", "accept": "application/json"}
        if data is not None:
            headers["content-type"] = "application/json"
        request = urllib.request.Request(  # noqa: S310 - the operator's own gateway URL
            url, data=data, headers=headers, method=method
        )
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as reply:  # noqa: S310
                raw = reply.read()
        except urllib.error.HTTPError as exc:
            raise _http_error(method, url, exc) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ControlError(f"cannot reach {self.where}: {reason}") from None
        try:
            answer = json.loads(raw) if raw else {}
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise ControlError(f"{method} {url}: the answer is not a JSON object")
        return answer


def _at(project_id: str) -> str:
    return f"/projects/{urllib.parse.quote(project_id, safe='')}"


def _http_error(method: str, url: str, exc: urllib.error.HTTPError) -> ControlError:
    try:
        error = json.loads(exc.read()).get("error", {})
    except (ValueError, AttributeError, OSError):
        error = {}
    message = str(error.get("message") or exc.reason or "no detail")
    if exc.code == 401:
        return ControlError(f"{method} {url}: the admin key was refused ({message})")
    meta = error.get("meta") or {}
    problems = [(e.get("path", "?"), e.get("message", "")) for e in meta.get("errors") or ()]
    return ControlError(f"HTTP {exc.code}: " + _problems(message, problems))
