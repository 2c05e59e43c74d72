"""What still references a route or a provider, found before it is deleted or disabled.

Rule 1: a route's dependents are the consumers assigned it, the project whose default it is,
the bindings whose grants name it, the live keys that list it in `routes`, and the other routes
that fall back to it. A provider's are the routes with a target on it and the consumers pinned
to it.
Rule 2: references by id (consumers, the project default) are matched by id; references by name
(grants, keys, fallbacks, targets) by the exact name, as the config file resolves them.
Rule 3: the refusal's `meta` counts each kind and samples up to 5 ids, oldest first:
`{"consumers": {"count": 7, "sample": [...]}, "keys": {...}}`; kinds with none are left out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from sqlalchemy import select

from turnout.errors import ModelRouteHasDependents, ProviderHasDependents
from turnout.store.models import Binding, Consumer, Key, Project, Provider, Route

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from sqlalchemy.orm import Session

__all__ = [
    "SAMPLE_SIZE",
    "dependents_meta",
    "refuse_provider_with_dependents",
    "refuse_route_with_dependents",
]

SAMPLE_SIZE: Final = 5
"""How many ids a refusal names per kind."""

_KIND_WORDS: Final = {
    "consumers": ("consumer", "consumers"),
    "projects": ("project default", "project defaults"),
    "bindings": ("binding", "bindings"),
    "keys": ("key", "keys"),
    "routes": ("route", "routes"),
}


def refuse_route_with_dependents(session: Session, route: Route, action: str) -> None:
    """`ModelRouteHasDependents` if anything references `route` (Rule 1); `action` is
    `delete` or `disable`."""
    found = _route_dependents(session, route)
    if found:
        raise ModelRouteHasDependents(
            f"cannot {action} route {route.name!r}: {_summary(found)} reference it; point them "
            "at another route first",
            meta=dependents_meta(found),
        )


def refuse_provider_with_dependents(session: Session, provider: Provider) -> None:
    """`ProviderHasDependents` if a route targets `provider` or a consumer is pinned to it."""
    pid = provider.project_id
    found = {
        "routes": [
            row.id
            for row in _rows(session, Route, pid)
            if any(t.get("provider") == provider.name for t in row.settings.get("targets", ()))
        ],
        "consumers": _ids(
            session, Consumer, Consumer.project_id == pid, Consumer.ai_provider_id == provider.id
        ),
    }
    found = {kind: ids for kind, ids in found.items() if ids}
    if found:
        raise ProviderHasDependents(
            f"cannot delete provider {provider.name!r}: {_summary(found)} use it; move them to "
            "another provider first",
            meta=dependents_meta(found),
        )


def dependents_meta(found: Mapping[str, list[str]]) -> dict[str, Any]:
    """Rule 3: the refusal's `meta` for the ids found per kind."""
    return {
        kind: {"count": len(ids), "sample": ids[:SAMPLE_SIZE]} for kind, ids in found.items() if ids
    }


def _route_dependents(session: Session, route: Route) -> dict[str, list[str]]:
    pid, name = route.project_id, route.name
    found = {
        "consumers": _ids(
            session, Consumer, Consumer.project_id == pid, Consumer.model_route_id == route.id
        ),
        "projects": _ids(session, Project, Project.default_model_route_id == route.id),
        "bindings": [
            row.id
            for row in _rows(session, Binding, pid)
            if any(g.get("route") == name for g in row.settings.get("grants", ()))
        ],
        "keys": [
            row.id
            for row in _rows(session, Key, pid)
            if row.revoked_at is None and name in row.identity.get("routes", ())
        ],
        "routes": [
            row.id
            for row in _rows(session, Route, pid)
            if row.id != route.id and name in _fallback_names(row.settings)
        ],
    }
    return {kind: ids for kind, ids in found.items() if ids}


def _fallback_names(settings: Mapping[str, Any]) -> set[str]:
    fallbacks = settings.get("fallbacks") or {}
    return {str(name) for names in fallbacks.values() for name in names}


def _summary(found: Mapping[str, list[str]]) -> str:
    parts = []
    for kind, ids in found.items():
        one, many = _KIND_WORDS[kind]
        parts.append(f"{len(ids)} {one if len(ids) == 1 else many}")
    return ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]


def _ids(session: Session, model: Any, *where: Any) -> list[str]:
    query = select(model.id).where(*where).order_by(model.created_at, model.id)
    return list(session.scalars(query))


def _rows(session: Session, model: Any, project_id: str) -> Iterable[Any]:
    query = select(model).where(model.project_id == project_id)
    return session.scalars(query.order_by(model.created_at, model.id))
