"""The admin API's stored objects: projects, and each project's providers, routes,
consumers, keys, bindings and policies, as REST collections over the store's service
functions.

Rule 1: POST creates (201, the object with its id and stamps), GET reads, GET on the
collection lists (`{"data": [...]}`, oldest first), PATCH merge-patches (absent: unchanged,
null: cleared) and DELETE deletes (204). A key is created with its plaintext in `key`, this
once; `POST …/keys/{id}/revoke` revokes it.
Rule 2: a route's target may name its provider by `ai_provider_id` instead of `provider`; the
id is turned into the provider's name before the route is stored, so the store holds names
as the config file does. An id that names no provider of the project is a 400 naming the
target.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from turnout.errors import ConfigError, ObjectNotFound
from turnout.gateway.admin.dispatch import Operation
from turnout.gateway.admin.replies import NO_CONTENT, json_body
from turnout.gateway.admin.served import file_project
from turnout.gateway.admin.writes import read, write
from turnout.store import service

if TYPE_CHECKING:
    from collections.abc import Callable

    from turnout.gateway.admin.dispatch import AdminCall
    from turnout.gateway.responses.respond import Reply
    from turnout.store import Store

__all__ = ["COLLECTIONS", "Collection", "object_operations", "project_operations"]


@dataclass(frozen=True, slots=True)
class Collection:
    """A project-scoped collection: its path segment, its kind (as ids and the audit name
    it), the request schema's name, and its service functions (store first; writes take
    `actor=` and `validate=`)."""

    plural: str
    kind: str
    schema: str
    create: Callable[..., Any]
    get: Callable[..., dict[str, Any]]
    list: Callable[..., list[dict[str, Any]]]
    update: Callable[..., dict[str, Any]]
    delete: Callable[..., None]


def _settings(kind: service.ObjectKind, plural: str, schema: str) -> Collection:
    def create(store: Store, pid: str, body: dict[str, Any], **options: Any) -> dict[str, Any]:
        return service.create_object(store, kind, pid, body, **options)

    def get(store: Store, pid: str, oid: str) -> dict[str, Any]:
        return service.get_object(store, kind, pid, oid)

    def list_(store: Store, pid: str) -> list[dict[str, Any]]:
        return service.list_objects(store, kind, pid)

    def update(
        store: Store, pid: str, oid: str, patch: dict[str, Any], **options: Any
    ) -> dict[str, Any]:
        return service.update_object(store, kind, pid, oid, patch, **options)

    def delete(store: Store, pid: str, oid: str, **options: Any) -> None:
        service.delete_object(store, kind, pid, oid, **options)

    return Collection(plural, kind, schema, create, get, list_, update, delete)


KEYS = Collection(
    "keys",
    "key",
    "KeyBody",
    service.create_key,
    service.get_key,
    service.list_keys,
    service.update_key,
    service.delete_key,
)
CONSUMERS = Collection(
    "consumers",
    "consumer",
    "ConsumerBody",
    service.create_consumer,
    service.get_consumer,
    service.list_consumers,
    service.update_consumer,
    service.delete_consumer,
)
COLLECTIONS: tuple[Collection, ...] = (
    _settings("provider", "providers", "ProviderConfig"),
    _settings("route", "routes", "RouteBody"),
    CONSUMERS,
    KEYS,
    _settings("binding", "bindings", "BindingConfig"),
    _settings("policy", "policies", "PolicyConfig"),
)
"""Every project-scoped collection."""


_KIND_FILTER = (("kind", {"type": "string"}, "Only consumers of this kind (`agent` …)."),)


# ---- projects -------------------------------------------------------------------------------


async def create_project(call: AdminCall) -> Reply:
    found = await write(call, service.create_project, call.body, what="create project")
    return json_body(201, found)


async def list_projects(call: AdminCall) -> Reply:
    return json_body(200, {"data": await read(call, service.list_projects)})


async def get_project(call: AdminCall) -> Reply:
    return json_body(200, await read(call, service.get_project, call.params["project_id"]))


async def update_project(call: AdminCall) -> Reply:
    pid = call.params["project_id"]
    update = functools.partial(service.update_project, file_project=file_project(call))
    found = await write(call, update, pid, call.body, what=f"update {pid}")
    return json_body(200, found)


async def delete_project(call: AdminCall) -> Reply:
    pid = call.params["project_id"]
    delete = functools.partial(service.delete_project, file_project=file_project(call))
    await write(call, delete, pid, what=f"delete {pid}")
    return NO_CONTENT


def project_operations() -> tuple[Operation, ...]:
    """The operations on `/projects` and `/projects/{project_id}`."""
    one = "/projects/{project_id}"
    tag = "projects"
    return (
        Operation("POST", "/projects", create_project, "Create a project", tag,
                  (201, "StoredProject"), "ProjectBody", errors=(400, 409)),
        Operation("GET", "/projects", list_projects, "List projects", tag, (200, "ProjectList")),
        Operation("GET", one, get_project, "Read a project", tag, (200, "StoredProject"),
                  errors=(404,)),
        Operation("PATCH", one, update_project, "Merge-patch a project", tag,
                  (200, "StoredProject"), "ProjectBody", errors=(400, 404, 409)),
        Operation("DELETE", one, delete_project, "Delete a project and all it owns", tag,
                  (204, None), errors=(404, 409)),
    )  # fmt: skip


# ---- project-scoped collections -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Handlers:
    """The handlers of one collection (Rule 1)."""

    collection: Collection

    async def create(self, call: AdminCall) -> Reply:
        collection, pid = self.collection, call.params["project_id"]
        body = await _named_providers(call, collection, call.body)
        what = f"create {collection.kind} in {pid}"
        found = await write(call, collection.create, pid, body, what=what)
        if collection is KEYS:
            stored, plaintext = found
            return json_body(201, {**stored, "key": plaintext})
        return json_body(201, found)

    async def list(self, call: AdminCall) -> Reply:
        collection, pid = self.collection, call.params["project_id"]
        kind = call.query.get("kind")
        if collection is CONSUMERS and kind:
            found = await read(call, lambda store: collection.list(store, pid, kind=kind))
        else:
            found = await read(call, collection.list, pid)
        return json_body(200, {"data": found})

    async def get(self, call: AdminCall) -> Reply:
        pid, oid = call.params["project_id"], call.params["object_id"]
        return json_body(200, await read(call, self.collection.get, pid, oid))

    async def update(self, call: AdminCall) -> Reply:
        pid, oid = call.params["project_id"], call.params["object_id"]
        patch = await _named_providers(call, self.collection, call.body)
        found = await write(call, self.collection.update, pid, oid, patch, what=f"update {oid}")
        return json_body(200, found)

    async def delete(self, call: AdminCall) -> Reply:
        pid, oid = call.params["project_id"], call.params["object_id"]
        await write(call, self.collection.delete, pid, oid, what=f"delete {oid}")
        return NO_CONTENT


async def revoke_key(call: AdminCall) -> Reply:
    pid, oid = call.params["project_id"], call.params["object_id"]
    found = await write(call, service.revoke_key, pid, oid, what=f"revoke {oid}")
    return json_body(200, found)


def object_operations(collection: Collection) -> tuple[Operation, ...]:
    """The operations on `/projects/{project_id}/<plural>` and `…/{object_id}`."""
    many = f"/projects/{{project_id}}/{collection.plural}"
    one = f"{many}/{{object_id}}"
    kind, plural, schema = collection.kind, collection.plural, collection.schema
    created = "CreatedKey" if collection is KEYS else "StoredObject"
    on = _Handlers(collection)
    operations = (
        Operation("POST", many, on.create, f"Create a {kind}", plural, (201, created), schema,
                  errors=(400, 404, 409), operation_id=f"create_{kind}"),
        Operation("GET", many, on.list, f"List the project's {plural}", plural,
                  (200, "ObjectList"), errors=(404,), operation_id=f"list_{plural}",
                  query=_KIND_FILTER if collection is CONSUMERS else ()),
        Operation("GET", one, on.get, f"Read a {kind}", plural, (200, "StoredObject"),
                  errors=(404,), operation_id=f"get_{kind}"),
        Operation("PATCH", one, on.update, f"Merge-patch a {kind}", plural,
                  (200, "StoredObject"), f"{schema}Patch", errors=(400, 404, 409),
                  operation_id=f"update_{kind}"),
        Operation("DELETE", one, on.delete, f"Delete a {kind}", plural, (204, None),
                  errors=(404, 409), operation_id=f"delete_{kind}"),
    )  # fmt: skip
    if collection is not KEYS:
        return operations
    revoke = Operation("POST", f"{one}/revoke", revoke_key, "Revoke a key", plural,
                       (200, "StoredObject"), errors=(404, 409))  # fmt: skip
    return (*operations, revoke)


async def _named_providers(
    call: AdminCall, collection: Collection, body: dict[str, Any]
) -> dict[str, Any]:
    """Rule 2: a route body's targets with `ai_provider_id` turned into `provider`."""
    targets = body.get("targets")
    if collection.kind != "route" or not isinstance(targets, list):
        return body
    if not any(isinstance(t, dict) and "ai_provider_id" in t for t in targets):
        return body
    pid = call.params["project_id"]
    named = await read(call, _provider_names, pid, targets)
    return {**body, "targets": named}


def _provider_names(store: Store, pid: str, targets: list[Any]) -> list[Any]:
    out: list[Any] = []
    for index, target in enumerate(targets):
        if not isinstance(target, dict) or "ai_provider_id" not in target:
            out.append(target)
            continue
        path = f"targets[{index}]"
        rest = {name: value for name, value in target.items() if name != "ai_provider_id"}
        provider_id = target["ai_provider_id"]
        if "provider" in rest:
            rule = "set one of provider and ai_provider_id"
            raise ConfigError(f"invalid route: {path}: {rule}", [(path, rule)])
        if not isinstance(provider_id, str):
            rule = "must be a provider's id (a string)"
            raise ConfigError(f"invalid route: {path}.ai_provider_id: {rule}", [(path, rule)])
        try:
            name = service.get_object(store, "provider", pid, provider_id)["name"]
        except ObjectNotFound:
            rule = f"no provider {provider_id!r} in this project"
            raise ConfigError(
                f"invalid route: {path}.ai_provider_id: {rule}",
                [(f"{path}.ai_provider_id", rule)],
            ) from None
        out.append({**rest, "provider": name})
    return out
