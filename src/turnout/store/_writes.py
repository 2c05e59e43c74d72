"""What every service function shares: one transaction per write, the audit row and version bump
that go with it, JSON merge-patch, and the plain dicts objects are returned as.

Rule 1: a write and its `config_changes` row and version bump commit together or not at all.
Rule 2: nothing returned or audited holds a secret: provider secrets are masked, keys never kept.
Rule 3: a unique-index clash is `NameTaken`; any other integrity error is not a name clash and
goes up as it is (the service functions look for dependents before they delete).
Rule 4: a write given a validation hook calls it after its changes are flushed and before they
commit; whatever the hook raises rolls the whole write back.
Rule 5: objects from the config file (`source` `file`) are changed only by the file's sync.
Rule 6: writes made inside `one_transaction(store)` share its transaction: they commit together
when it ends, and any error rolls every one of them back (each still audited and versioned).
Rule 7: a service function's write of one object is one `audited_write`: the transaction, the
object added, changed or deleted in its block, then (once the block ends without an error) the
validation hook, the object as the write leaves it, and its `config_changes` row.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from turnout.errors import ConfigError, FileManaged, NameTaken, ObjectNotFound
from turnout.store.models import ConfigChange, Meta, Project
from turnout.store.notify import notify_change
from turnout.store.provider_secrets import MASK
from turnout.store.snapshot import project_snapshot

if TYPE_CHECKING:
    from collections.abc import Collection, Iterator, Mapping

    from pydantic import BaseModel
    from sqlalchemy.orm import Session

    from turnout.store.engine import Store
    from turnout.store.snapshot import ProjectSnapshot

    Validate = Callable[[ProjectSnapshot], None]
    """A write's validation hook: it sees the project as the write leaves it, and raises (a
    `ConfigError`, say) to roll the write back."""

__all__ = [
    "MASK",
    "AuditedChange",
    "audit",
    "audited_write",
    "check_written",
    "current_version",
    "get_row",
    "merge_patch",
    "one_transaction",
    "refuse_file_managed",
    "require_project",
    "stamps",
    "to_config_error",
    "validated_fields",
    "write",
]

_Row = TypeVar("_Row")


_Object = TypeVar("_Object")
Read = Callable[["Session", _Object], dict[str, Any]]
"""How an audited write shows its object (in the change log and to the caller)."""
_SHARED: ContextVar[tuple[Store, Session] | None] = ContextVar("_SHARED", default=None)


@contextmanager
def write(store: Store) -> Iterator[Session]:
    """A session in one transaction, committed on success; a unique-index clash is `NameTaken`.
    Inside `one_transaction(store)`, its session (Rule 6)."""
    shared = _SHARED.get()
    if shared is not None and shared[0] is store:
        with _named_clash():
            yield shared[1]
        return
    with _named_clash(), store.sessions.begin() as session:
        yield session


@contextmanager
def one_transaction(store: Store) -> Iterator[None]:
    """Rule 6: every write to `store` in this block, in one transaction."""
    if _SHARED.get() is not None:
        raise RuntimeError("one_transaction: already inside one")
    with _named_clash(), store.sessions.begin() as session:
        token = _SHARED.set((store, session))
        try:
            yield
        finally:
            _SHARED.reset(token)


@contextmanager
def _named_clash() -> Iterator[None]:
    try:
        yield
    except IntegrityError as exc:
        if _is_unique_clash(exc):
            raise NameTaken("the name is already used in this project") from exc
        raise


def _is_unique_clash(exc: IntegrityError) -> bool:
    """Whether the database refused a duplicate in a unique index (not a foreign key, say)."""
    error = exc.orig
    if getattr(error, "sqlstate", None) == "23505":  # PostgreSQL's unique_violation
        return True
    sqlite_name = getattr(error, "sqlite_errorname", None)
    if sqlite_name is not None:
        return sqlite_name in {"SQLITE_CONSTRAINT_UNIQUE", "SQLITE_CONSTRAINT_PRIMARYKEY"}
    return "UNIQUE constraint failed" in str(error)


def check_written(
    session: Session, store: Store, project_id: str, validate: Validate | None
) -> None:
    """Flush the write, then Rule 4: call `validate` with the project as the write leaves it."""
    session.flush()
    if validate is not None:
        validate(project_snapshot(session, store, project_id))


def refuse_file_managed(kind: str, row: Any, *, allow_file: bool) -> None:
    """Rule 5: `FileManaged` for a provider or route that came from the config file."""
    if getattr(row, "source", "api") == "file" and not allow_file:
        raise FileManaged(
            f"{kind} {row.name!r} ({row.id}) comes from the config file: edit it there; it is "
            "read-only through the admin API",
            meta={"id": row.id, "name": row.name},
        )


def audit(
    session: Session,
    *,
    actor: str | None,
    action: str,
    kind: str,
    object_id: str,
    project_id: str | None,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
) -> None:
    """Bump the version and record the change (`before`/`after` already masked); on PostgreSQL
    the change is notified to listening replicas when the transaction commits."""
    session.flush()
    meta = session.get_one(Meta, 1, with_for_update=True)
    meta.version += 1
    session.add(
        ConfigChange(
            version=meta.version,
            admin_key_id=actor,
            action=action,
            kind=kind,
            object_id=object_id,
            project_id=project_id,
            before=before,
            after=after,
        )
    )
    notify_change(session, meta.version)


class AuditedChange(Generic[_Object]):
    """Rule 7: the session of one audited write and the object it writes, as `read` shows it
    (given the session and the object) before (`before`) and after (`after`) the write."""

    def __init__(self, session: Session, read: Read[_Object]) -> None:
        self.session = session
        self.read = read
        self.row: _Object | None = None
        self.before: dict[str, Any] | None = None
        self.after: dict[str, Any] | None = None
        self.deleted = False

    def add(self, row: _Object) -> None:
        """Create `row`."""
        self.session.add(row)
        self.row = row

    def track(self, row: _Object) -> dict[str, Any]:
        """Change `row` (the block changes it after this): it as it was."""
        self.row = row
        self.before = self.read(self.session, row)
        return self.before

    def written(self) -> dict[str, Any]:
        """The object as the write left it (once the block ended)."""
        assert self.after is not None, "read once the write's block ended, of a kept object"
        return self.after

    def delete(self, row: _Object) -> None:
        """Delete `row`."""
        self.track(row)
        self.session.delete(row)
        self.deleted = True


@contextmanager
def audited_write(
    store: Store,
    kind: str,
    action: str,
    read: Read[_Object],
    *,
    project_id: str,
    actor: str | None,
    validate: Validate | None,
) -> Iterator[AuditedChange[_Object]]:
    """Rule 7: the write of one object of `project_id` (or of that project itself) in its own
    transaction (`write`). After the block: `validate` (Rule 4), the object read again
    (`after`, None when deleted), the change recorded (`audit`: the object's id is the `id`
    that `read` shows)."""
    with write(store) as session:
        change: AuditedChange[_Object] = AuditedChange(session, read)
        yield change
        row = change.row
        assert row is not None, "an audited write adds, tracks or deletes its object"
        check_written(session, store, project_id, validate)
        if not change.deleted:
            change.after = read(session, row)
        shown = change.before if change.after is None else change.after
        assert shown is not None
        audit(session, actor=actor, action=action, kind=kind, object_id=shown["id"],
              project_id=project_id, before=change.before, after=change.after)  # fmt: skip


def current_version(store: Store) -> int:
    """The version counter: it grows with every write."""
    with store.sessions() as session:
        return session.scalars(select(Meta.version)).one()


def get_row(
    session: Session, model: type[_Row], kind: str, project_id: str, object_id: str
) -> _Row:
    """The row of `model` with this id in this project, or `ObjectNotFound`."""
    row = session.get(model, object_id)
    if row is None or getattr(row, "project_id", project_id) != project_id:
        raise ObjectNotFound(f"no {kind} {object_id!r} in project {project_id!r}")
    return row


def require_project(session: Session, project_id: str) -> Project:
    """The project, or `ObjectNotFound` saying how projects are named (by id, and the id of
    the project when `project_id` is its name)."""
    row = session.get(Project, project_id)
    if row is not None:
        return row
    named = session.scalars(select(Project.id).where(Project.name == project_id)).first()
    hint = (
        f"; project {project_id!r} has the id {named!r}: use that"
        if named is not None
        else "; a project is named by its id (proj_…), as GET /admin/v1/projects lists them"
    )
    raise ObjectNotFound(f"no project with the id {project_id!r}{hint}")


def refuse_unknown(kind: str, patch: Mapping[str, Any], known: Collection[str]) -> None:
    """A patch names only fields the object has: one that clears another field is refused,
    not a silent no-op."""
    unknown = sorted(set(patch) - set(known))
    if unknown:
        rule = "unknown field"
        raise ConfigError(f"invalid {kind}: {unknown[0]}: {rule}", [(unknown[0], rule)])


def merge_patch(target: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """JSON merge-patch: a key absent from `patch` is unchanged, None removes it, objects merge."""
    merged = dict(target)
    for name, value in patch.items():
        if value is None:
            merged.pop(name, None)
        elif isinstance(value, dict) and isinstance(merged.get(name), dict):
            merged[name] = merge_patch(merged[name], value)
        else:
            merged[name] = value
    return merged


def stamps(created_at: datetime, updated_at: datetime) -> dict[str, str]:
    """The `created_at`/`updated_at` of a returned object, as ISO 8601 in UTC."""
    return {"created_at": _utc(created_at), "updated_at": _utc(updated_at)}


def _utc(moment: datetime) -> str:
    # SQLite hands back naive datetimes; every stored time is UTC.
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return aware.astimezone(UTC).isoformat()


def validated_fields(kind: str, schema: type[BaseModel], body: Mapping[str, Any]) -> dict[str, Any]:
    """`body` validated by the config file's `schema`, as JSON values of the fields it sets; a
    body that fails is a 400 `VALIDATION_FAILED` naming each field and rule."""
    try:
        return schema.model_validate(body).model_dump(mode="json", exclude_unset=True)
    except ValidationError as exc:
        raise to_config_error(kind, exc) from None


def to_config_error(kind: str, exc: ValidationError) -> ConfigError:
    """A pydantic error as a 400 `VALIDATION_FAILED` naming each field and rule."""
    errors = [(".".join(str(part) for part in e["loc"]), e["msg"]) for e in exc.errors()]
    summary = "; ".join(f"{path}: {message}" for path, message in errors)
    return ConfigError(f"invalid {kind}: {summary}", errors)
