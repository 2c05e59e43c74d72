"""Service functions for the settings objects of a project: providers, routes, bindings and
policies. Bodies use the config file's field names and are validated by its models.

Rule 1: routes and providers share one name space per project, ignoring case (`NameTaken`);
bindings and policies each have their own.
Rule 2: a provider's credentials (`api_key`, and a cloud kind's service-account JSON or AWS
keys) are stored sealed (`turnout.store.provider_secrets`) and read back masked; an update that
leaves a secret out, or sends it masked, keeps the stored one.
Rule 3: an update is a JSON merge-patch of the object's fields, validated whole afterwards.
Rule 4: a route is not deleted or disabled while anything references it, nor a provider deleted
while a route or consumer uses it (`turnout.store.dependents`).
Rule 5: providers and routes from the config file are read-only here (`FileManaged`) unless the
file's sync says `allow_file`.
Rule 6: every write takes a `validate` hook, called with the project as the write leaves it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

from sqlalchemy import func, select

from turnout.errors import ConfigError, NameTaken, SecretKeyMissing
from turnout.schema import BindingConfig, PolicyConfig, ProviderConfig, RouteConfig
from turnout.store._writes import (
    MASK,
    audited_write,
    get_row,
    merge_patch,
    refuse_file_managed,
    refuse_unknown,
    require_project,
    stamps,
    validated_fields,
)
from turnout.store.dependents import refuse_provider_with_dependents, refuse_route_with_dependents
from turnout.store.ids import new_id
from turnout.store.models import Binding, Policy, Provider, Route
from turnout.store.provider_secrets import SECRET_FIELDS, seal, unseal
from turnout.store.secret_box import SECRET_KEY_VARIABLE

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pydantic import BaseModel
    from sqlalchemy.orm import Session

    from turnout.store._writes import Read, Validate
    from turnout.store.engine import Store

__all__ = [
    "ObjectKind",
    "check_secret_key",
    "create_object",
    "delete_object",
    "get_object",
    "list_objects",
    "provider_secret",
    "update_object",
]

ObjectKind = Literal["provider", "route", "binding", "policy"]
_Row = Provider | Route | Binding | Policy


@dataclass(frozen=True, slots=True)
class _Kind:
    model: type[Provider] | type[Route] | type[Binding] | type[Policy]
    schema: type[BaseModel]
    columns: tuple[str, ...]
    shared_names: bool


_KINDS: dict[str, _Kind] = {
    "provider": _Kind(Provider, ProviderConfig, ("name", "kind"), shared_names=True),
    "route": _Kind(Route, RouteConfig, ("name",), shared_names=True),
    "binding": _Kind(Binding, BindingConfig, ("name",), shared_names=False),
    "policy": _Kind(Policy, PolicyConfig, ("name",), shared_names=False),
}


def create_object(
    store: Store,
    kind: ObjectKind,
    project_id: str,
    body: Mapping[str, Any],
    *,
    actor: str | None = None,
    validate: Validate | None = None,
) -> dict[str, Any]:
    """Create a provider, route, binding or policy from `body`; returns it with its id."""
    spec = _KINDS[kind]
    fields, secrets = _validate(kind, dict(body), kept=None)
    with audited_write(store, kind, "create", _shown(spec), project_id=project_id,
                       actor=actor, validate=validate) as change:  # fmt: skip
        session = change.session
        require_project(session, project_id)
        _check_name(session, spec, project_id, fields["name"], None)
        row = spec.model(id=new_id(kind), project_id=project_id)
        _assign(row, spec, fields, _seal(store, secrets))
        change.add(row)
    return change.written()


def get_object(store: Store, kind: ObjectKind, project_id: str, object_id: str) -> dict[str, Any]:
    """The object, or `ObjectNotFound`."""
    spec = _KINDS[kind]
    with store.sessions() as session:
        return _read(get_row(session, spec.model, kind, project_id, object_id), spec)


def list_objects(store: Store, kind: ObjectKind, project_id: str) -> list[dict[str, Any]]:
    """Every object of `kind` in the project, oldest first."""
    spec = _KINDS[kind]
    with store.sessions() as session:
        require_project(session, project_id)
        query = (
            select(spec.model)
            .where(spec.model.project_id == project_id)
            .order_by(spec.model.created_at, spec.model.id)
        )
        return [_read(cast("_Row", row), spec) for row in session.scalars(query)]


def update_object(
    store: Store,
    kind: ObjectKind,
    project_id: str,
    object_id: str,
    patch: Mapping[str, Any],
    *,
    actor: str | None = None,
    validate: Validate | None = None,
    allow_file: bool = False,
) -> dict[str, Any]:
    """Merge-patch the object (absent: unchanged; None: cleared) and validate it whole.
    Disabling a route that anything references is `ModelRouteHasDependents`."""
    spec = _KINDS[kind]
    with audited_write(store, kind, "update", _shown(spec), project_id=project_id,
                       actor=actor, validate=validate) as change:  # fmt: skip
        session = change.session
        row = get_row(session, spec.model, kind, project_id, object_id)
        refuse_file_managed(kind, row, allow_file=allow_file)
        before = change.track(row)
        current = {name: getattr(row, name) for name in spec.columns} | row.settings
        if isinstance(row, Provider) and _is_legacy(row):
            current["api_key"] = MASK
        refuse_unknown(kind, patch, spec.schema.model_fields)
        body = merge_patch(current, dict(patch))
        kept = None
        masked = any(body.get(name) == MASK for name in SECRET_FIELDS)
        if isinstance(row, Provider) and row.secret is not None and masked:
            kept = unseal(store.secrets, row.secret)
        fields, secrets = _validate(kind, body, kept=kept)
        _check_name(session, spec, project_id, fields["name"], row.id)
        if (
            isinstance(row, Route)
            and before.get("enabled", True)
            and not fields.get("enabled", True)
        ):
            refuse_route_with_dependents(session, row, "disable")
        _assign(row, spec, fields, _seal(store, secrets))
    return change.written()


def delete_object(
    store: Store,
    kind: ObjectKind,
    project_id: str,
    object_id: str,
    *,
    actor: str | None = None,
    validate: Validate | None = None,
    allow_file: bool = False,
) -> None:
    """Delete the object, or `ObjectNotFound`; a route or provider still referenced is
    `ModelRouteHasDependents` / `ProviderHasDependents`."""
    spec = _KINDS[kind]
    with audited_write(store, kind, "delete", _shown(spec), project_id=project_id,
                       actor=actor, validate=validate) as change:  # fmt: skip
        session = change.session
        row = get_row(session, spec.model, kind, project_id, object_id)
        refuse_file_managed(kind, row, allow_file=allow_file)
        if isinstance(row, Route):
            refuse_route_with_dependents(session, row, "delete")
        elif isinstance(row, Provider):
            refuse_provider_with_dependents(session, row)
        change.delete(row)


def check_secret_key(store: Store) -> None:
    """`SecretKeyMissing` naming `TURNOUT_SECRET_KEY` when the store holds sealed provider
    secrets and the store's box has no key to open them (a serving process cannot start so)."""
    if store.secrets.has_key:
        return
    with store.sessions() as session:
        sealed = session.scalars(select(Provider.id).where(Provider.secret.is_not(None)).limit(1))
        if sealed.first() is None:
            return
    raise SecretKeyMissing(
        f"{SECRET_KEY_VARIABLE} is not set, and the store holds encrypted provider secrets:"
        " set it to the key (or passphrase) they were stored under"
    )


def provider_secret(store: Store, project_id: str, provider_id: str) -> str | None:
    """The provider's `api_key` in plaintext (None without one); needs `TURNOUT_SECRET_KEY`."""
    with store.sessions() as session:
        row = get_row(session, Provider, "provider", project_id, provider_id)
        return None if row.secret is None else unseal(store.secrets, row.secret).get("api_key")


def _validate(
    kind: str, body: dict[str, Any], *, kept: Mapping[str, str] | None
) -> tuple[dict[str, Any], dict[str, str]]:
    """The validated fields (secrets only as `MASK` markers) and the secrets in plaintext: a
    masked secret is the stored one (`kept`)."""
    secrets: dict[str, str] = {}
    if kind == "provider":
        for name in SECRET_FIELDS:
            value = body.get(name)
            if value is None:
                continue
            if not isinstance(value, str) or not value:
                raise ConfigError(f"invalid {kind}: {name}: must be a non-empty string")
            if value == MASK:
                value = (kept or {}).get(name, "")
                if not value:
                    raise ConfigError(f"invalid {kind}: {name}: nothing is stored to keep: give it")
            secrets[name] = value
            body[name] = MASK  # validated as present; never echoed in an error
    return validated_fields(kind, _KINDS[kind].schema, body), secrets


def _is_legacy(row: Provider) -> bool:
    """A secret sealed before the settings marked each one: the bare API key."""
    return row.secret is not None and not any(n in row.settings for n in SECRET_FIELDS)


def _seal(store: Store, secrets: Mapping[str, str]) -> bytes | None:
    return seal(store.secrets, secrets)


def _assign(row: _Row, spec: _Kind, fields: dict[str, Any], secret: bytes | None) -> None:
    for name in spec.columns:
        setattr(row, name, fields[name])
    row.settings = {k: v for k, v in fields.items() if k not in spec.columns}
    if isinstance(row, Provider):
        row.secret = secret


def _check_name(
    session: Session, spec: _Kind, project_id: str, name: str, own_id: str | None
) -> None:
    models = (Provider, Route) if spec.shared_names else (spec.model,)
    for model in models:
        query = select(model.id).where(
            model.project_id == project_id, func.lower(model.name) == name.lower()
        )
        if any(found != own_id for found in session.scalars(query)):
            raise NameTaken(
                f"the name {name!r} is already used by a {model.__name__.lower()} of this project",
                meta={"name": name},
            )


def _shown(spec: _Kind) -> Read[_Row]:
    """How an audited write of `spec`'s kind shows its object."""
    return lambda _session, row: _read(row, spec)


def _read(row: _Row, spec: _Kind) -> dict[str, Any]:
    out: dict[str, Any] = {"id": row.id, "project_id": row.project_id}
    out |= {name: getattr(row, name) for name in spec.columns} | row.settings
    if isinstance(row, Provider):
        out["api_key"] = MASK if _is_legacy(row) or "api_key" in row.settings else None
    if isinstance(row, Provider | Route):
        out["source"] = row.source
    return out | stamps(row.created_at, row.updated_at)
