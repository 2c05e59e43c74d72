"""The OpenAPI 3.1 document of the admin API, built from its operations and from pydantic
models: the config file's models for the stored objects' bodies (`turnout.schema`) and the
API's own (`schemas`).

Rule 1: request and response bodies are JSON Schema (2020-12, as OpenAPI 3.1 takes it) made by
`model_json_schema`, with the config file's field names; every model lands in
`components.schemas` once.
Rule 2: a body the API takes in another shape than the file is derived here, from the file's
model: a route's target may name `ai_provider_id` instead of `provider`; a key's body has no
`key` or `hash` (turnout makes the key); each `…Patch` schema is its body with every field
optional and nullable (JSON merge-patch).
Rule 3: every error answer is the `ErrorEnvelope`; an operation lists the statuses it may
answer, and `default` covers the rest.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, Final

from pydantic.json_schema import models_json_schema

from turnout.gateway.admin.dispatch import PREFIX
from turnout.gateway.admin.schemas import REQUEST_MODELS, RESPONSE_MODELS
from turnout.schema import BindingConfig, KeyConfig, PolicyConfig, ProviderConfig, RouteConfig

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pydantic import BaseModel

    from turnout.gateway.admin.dispatch import Operation

__all__ = ["openapi_document"]

_REF: Final = "#/components/schemas/{model}"
_ERROR: Final = {"$ref": "#/components/schemas/ErrorEnvelope"}
_ERRORS: Final = {
    400: "The body or a parameter breaks a rule; `meta.errors` lists each problem.",
    401: "Missing or unknown admin key (`invalid_admin_key`).",
    404: "No such object (`NOT_FOUND`).",
    409: "A clash with other objects: a name taken, dependents, a file-managed object.",
    413: "The body is over 1 MiB.",
    415: "The body's content-type is not accepted.",
}
_PATCHED: Final = (
    "ProjectBody",
    "ProviderConfig",
    "RouteBody",
    "KeyBody",
    "BindingConfig",
    "PolicyConfig",
    "ConsumerBody",
)


def openapi_document(operations: Sequence[Operation]) -> dict[str, Any]:
    """The whole document for `operations`."""
    paths: dict[str, dict[str, Any]] = {}
    for operation in operations:
        item = paths.setdefault(PREFIX + operation.path, {})
        item[operation.method.lower()] = _operation(operation)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "turnout admin API",
            "version": "1",
            "description": "Projects, providers, routes, consumers, keys, bindings and "
            "policies over the store; the audit of changes; health, upstreams and a routing "
            'test. Every error is `{"error": {"code", "message", "meta"}}`.',
        },
        "paths": paths,
        "components": {
            "schemas": component_schemas(),
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "apiKey": {"type": "apiKey", "in": "header", "name": "x-api-key"},
            },
        },
        "security": [{"bearer": []}, {"apiKey": []}],
    }


def component_schemas() -> dict[str, Any]:
    """Rules 1 and 2: every schema the operations name."""
    config: list[tuple[type[BaseModel], Any]] = [
        (model, "validation")
        for model in (ProviderConfig, RouteConfig, KeyConfig, BindingConfig, PolicyConfig)
    ]
    config += [(model, "validation") for model in REQUEST_MODELS]
    config += [(model, "serialization") for model in RESPONSE_MODELS]
    _, top = models_json_schema(config, by_alias=False, ref_template=_REF)
    schemas: dict[str, Any] = dict(top.get("$defs", {}))
    target = copy.deepcopy(schemas["TargetConfig"])
    target["properties"]["ai_provider_id"] = {
        "type": "string",
        "description": "The provider's id, instead of `provider`.",
    }
    target["required"] = [name for name in target.get("required", ()) if name != "provider"]
    schemas["TargetBody"] = target
    route = copy.deepcopy(schemas["RouteConfig"])
    route["properties"]["targets"]["items"] = {"$ref": _REF.format(model="TargetBody")}
    schemas["RouteBody"] = route
    key = copy.deepcopy(schemas["KeyConfig"])
    for name in ("key", "hash"):
        key["properties"].pop(name, None)
    schemas["KeyBody"] = key
    for name in _PATCHED:
        schemas[f"{name}Patch"] = _patch(schemas[name])
    return schemas


def _patch(schema: dict[str, Any]) -> dict[str, Any]:
    """Rule 2: every field optional and nullable."""
    patched = copy.deepcopy(schema)
    patched.pop("required", None)
    patched["properties"] = {
        name: {"anyOf": [field, {"type": "null"}]}
        for name, field in patched.get("properties", {}).items()
    }
    patched["title"] = f"{schema.get('title', 'Body')} (merge-patch)"
    return patched


def _operation(operation: Operation) -> dict[str, Any]:
    parameters: list[dict[str, Any]] = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in _path_names(operation.path)
    ]
    parameters += [
        {"name": name, "in": "query", "required": False, "schema": schema, "description": text}
        for name, schema, text in operation.query
    ]
    status, schema_name = operation.ok
    ok: dict[str, Any] = {"description": "Success."}
    if schema_name is not None:
        ok["content"] = {"application/json": {"schema": {"$ref": _REF.format(model=schema_name)}}}
    responses: dict[str, Any] = {str(status): ok}
    for code in (401, *operation.errors):
        responses[str(code)] = _error(_ERRORS[code])
    if operation.request is not None:
        responses.setdefault("400", _error(_ERRORS[400]))
        responses["413"] = _error(_ERRORS[413])
        responses["415"] = _error(_ERRORS[415])
    responses["default"] = _error("Any other error, in the same envelope.")
    found: dict[str, Any] = {
        "operationId": operation.name,
        "summary": operation.summary,
        "tags": [operation.tag],
        "responses": responses,
    }
    if parameters:
        found["parameters"] = parameters
    if operation.request is not None:
        body = {"schema": {"$ref": _REF.format(model=operation.request)}}
        found["requestBody"] = {
            "required": True,
            "content": dict.fromkeys(reversed(operation.content_types), body),
        }
    return found


def _error(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": _ERROR}}}


def _path_names(path: str) -> list[str]:
    return [part[1:-1] for part in path.split("/") if part.startswith("{")]
