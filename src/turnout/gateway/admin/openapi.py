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
Rule 3: what the one validator refuses and JSON Schema can say is said here too, so that a body
the document accepts is one the API takes (its references aside) and the reverse: a target
names `provider` or `ai_provider_id`, exactly one; a route has at most 10 targets, and
`max_retries` is at most 9 (a route makes at most 10 attempts); a binding's subject sets
exactly one field, not blank (`everyone` only as true); a policy's `deny_when` holds a
condition, each with non-blank values, a `family` among the families; a key's and a
provider's model patterns hold no whitespace, and a `*` only at either end; a project's name
is not blank. A provider body is checked by its `kind` (a discriminator over one schema per
kind): what the kind needs (`wire` and `base_url` for azure-openai, `base_url` or `preset` for
openai-compatible, `project` for vertex, AWS keys in pairs and no passthrough for bedrock) and
the options it does not take (absent or empty), each as the kind's class says it
(`config_rules`, read from the providers' registry); a secret, when given, is not empty; prices and
catalog overrides are keyed by one model name. A consumer is assigned a route or a provider
pin, not both; only an agent takes a route, only a chat or a memory an agent, and a `model`
needs a provider pin; a reference goes by id or by name. A `…Patch` schema keeps only each
field's own rules: the rest depends on the object the patch merges into.
Rule 4: every error answer is the `ErrorEnvelope`; an operation lists the statuses it may
answer, and `default` covers the rest.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, Final

from pydantic.json_schema import models_json_schema

from turnout.access.policies import FAMILIES
from turnout.gateway.admin.dispatch import PREFIX
from turnout.gateway.admin.schemas import REQUEST_MODELS, RESPONSE_MODELS
from turnout.providers.kinds import KINDS
from turnout.schema import BindingConfig, KeyConfig, PolicyConfig, ProviderConfig, RouteConfig

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

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
    _validator_rules(schemas)
    for name in _PATCHED:
        schemas[f"{name}Patch"] = _patch(schemas[name])
    return schemas


_SPACE: Final = (
    r"\u0009-\u000d\u001c-\u001f\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f"
    r"\u205f\u3000"
)
"""The characters Python counts as whitespace (what the validator strips and refuses), as a
character class's content every JSON Schema dialect reads."""
_NOT_BLANK: Final = f"[^{_SPACE}]"
_LABEL_NAME: Final = f"^[^=]*[^={_SPACE}]"
_MODEL_PATTERN: Final = f"^([*]|[*]?[^*{_SPACE}]+[*]?)$"
"""A model pattern: `*` alone, else characters without whitespace and a `*` at either end."""
_FAMILY_PATTERN: Final = (
    f"^[{_SPACE}]*("
    + "|".join("".join(f"[{c}{c.upper()}]" for c in name) for name in sorted(FAMILIES))
    + f")[{_SPACE}]*$"
)
"""A family, in any case."""


def _validator_rules(schemas: dict[str, Any]) -> None:
    """Rule 3."""
    for name in ("TargetConfig", "TargetBody"):
        schemas[name]["properties"]["max_retries"]["maximum"] = 9
    for name in ("RouteConfig", "RouteBody"):
        schemas[name]["properties"]["targets"]["maxItems"] = 10
    target = schemas["TargetBody"]
    target["properties"]["ai_provider_id"]["minLength"] = 1
    target["oneOf"] = [_is_set(field) for field in ("provider", "ai_provider_id")]
    subject = schemas["SubjectConfig"]
    subject["oneOf"] = [_is_set(field) for field in subject["properties"]]
    for name, field in subject["properties"].items():
        if name == "everyone":
            field["anyOf"] = [{"const": True}, {"type": "null"}]
        else:  # not blank; a label's name before any `=`
            blank = _LABEL_NAME if name == "agent_label" else _NOT_BLANK
            field["anyOf"] = [{"type": "string", "pattern": blank}, {"type": "null"}]
    deny_when = schemas["PolicyConfig"]["properties"]["deny_when"]
    deny_when["minProperties"] = 1
    deny_when["additionalProperties"] = _values(_NOT_BLANK)
    deny_when["properties"] = {"family": _values(_FAMILY_PATTERN)}
    for name in ("KeyConfig", "KeyBody"):
        patterns = schemas[name]["properties"]["allowed_models"]["items"]
        patterns["pattern"] = _MODEL_PATTERN
    schemas["ProjectBody"]["properties"]["name"]["pattern"] = _NOT_BLANK
    _provider_rules(schemas)
    _consumer_rules(schemas["ConsumerBody"])


_SECRETS: Final = ("api_key", "credentials_json", "secret_access_key", "session_token")
"""The provider fields stored sealed: when given, never empty."""
_GIVEN: Final = {"type": "string", "minLength": 1}
_EMPTY: Final = {"anyOf": [{"type": "null"}, {"const": ""}, {"maxItems": 0, "type": "array"}]}
_NULL: Final = {"type": "null"}
_ONE_MODEL: Final = {"pattern": f"^[^*{_SPACE}]+$"}
"""A price's or a catalog override's model: one name, without `*` or whitespace."""


def _provider_rules(schemas: dict[str, Any]) -> None:
    """Rule 3 for providers: each kind's own schema (`Provider<Kind>Rules`), chosen by `kind`
    (a discriminator), says what that kind needs and which options it does not take."""
    provider = schemas["ProviderConfig"]
    for name in ("prices", "catalog"):
        provider["properties"][name]["propertyNames"] = _ONE_MODEL
    for name in _SECRETS:
        provider["properties"][name]["anyOf"][0]["minLength"] = 1
    provider["properties"]["model_patterns"]["items"]["pattern"] = _MODEL_PATTERN
    fields = provider["properties"]
    taken = {option for kind in KINDS for option in KINDS[kind].config_rules.options}
    options = [name for name in fields if name in taken]
    mapping: dict[str, str] = {}
    for kind in fields["kind"]["enum"]:
        name = "Provider" + "".join(part.title() for part in kind.split("-")) + "Rules"
        schemas[name] = _kind_rules(kind, fields, options)
        mapping[kind] = _REF.format(model=name)
    provider["oneOf"] = [{"$ref": ref} for ref in mapping.values()]
    provider["discriminator"] = {"propertyName": "kind", "mapping": mapping}


def _kind_rules(kind: str, fields: Mapping[str, Any], options: Sequence[str]) -> dict[str, Any]:
    """What a provider of `kind` needs beyond the fields' own types, as its class says
    (`config_rules`); `fields` are the provider's field schemas and `options` every option
    only some kinds take."""
    said = KINDS[kind].config_rules
    properties: dict[str, Any] = {"kind": {"const": kind}}
    properties.update(
        (option, _NULL if option in _SECRETS else _EMPTY)
        for option in options
        if option not in said.options
    )
    rules: dict[str, Any] = {"type": "object", "required": ["kind", *said.required]}
    rules["properties"] = properties
    properties.update((name, _given_value(fields[name])) for name in said.required)
    properties.update((name, _NULL) for name in said.refused)
    properties.update((name, {"not": {"const": value}}) for name, value in said.refused_values)
    alternatives = []
    if said.either:
        alternatives.append([_present(name, fields[name]) for name in said.either])
    if said.paired:
        absent = {name: _NULL if name in _SECRETS else _EMPTY for name in said.paired}
        given = {"allOf": [_present(name, fields[name]) for name in said.paired]}
        alternatives.append([given, {"properties": absent}])
    if len(alternatives) == 1:
        rules["anyOf"] = alternatives[0]
    elif alternatives:
        rules["allOf"] = [{"anyOf": choices} for choices in alternatives]
    if said.exclusive:
        rules["not"] = {"allOf": [_present(name, fields[name]) for name in said.exclusive]}
    return rules


def _given_value(field: Mapping[str, Any]) -> dict[str, Any]:
    """A value of `field` that counts as given: a choice that is set, else a string not
    empty."""
    if any("enum" in choice for choice in field.get("anyOf", ())):
        return {"not": {"type": "null"}}
    return _GIVEN


def _present(name: str, field: Mapping[str, Any]) -> dict[str, Any]:
    """JSON Schema for "`name` is given" (see `_given_value`)."""
    return {"required": [name], "properties": {name: _given_value(field)}}


_STRIPPED_NAME: Final = (
    f"^[{_SPACE}]*([^{_SPACE}]|[^{_SPACE}][\\s\\S]{{0,126}}[^{_SPACE}])[{_SPACE}]*$"
)
"""A consumer's name: 1 to 128 characters once stripped of whitespace at either end."""
_CONSUMER_PAIRS: Final = (
    ("model_route_id", "model_route"),
    ("ai_provider_id", "provider"),
    ("agent_id", "agent"),
)
"""Each reference of a consumer, by id and by name."""


def _consumer_rules(consumer: dict[str, Any]) -> None:
    """Rule 3 for consumers: a route or a provider pin, not both; a route only for agents; an
    agent only for chats and memories; a model only with a provider pin; a reference by id or
    by name (both only when both are null)."""
    fields = consumer["properties"]
    fields["name"].pop("maxLength", None)
    fields["name"]["pattern"] = _STRIPPED_NAME
    fields["model"]["anyOf"][0].update(minLength=1, maxLength=256)
    route, provider, agent = (
        {"anyOf": [_is_string(field) for field in pair]} for pair in _CONSUMER_PAIRS
    )
    consumer["allOf"] = [
        {"not": {"allOf": [route, provider]}},
        {"anyOf": [{"not": route}, _kind_in("agent")]},
        {"anyOf": [{"not": agent}, _kind_in("chat", "memory")]},
        {"anyOf": [{"not": _is_string("model")}, provider]},
        *(
            {"not": {"required": list(pair), "anyOf": [_is_string(field) for field in pair]}}
            for pair in _CONSUMER_PAIRS
        ),
    ]


def _is_string(field: str) -> dict[str, Any]:
    """JSON Schema for "`field` is present and a string"."""
    return {"required": [field], "properties": {field: {"type": "string"}}}


def _kind_in(*kinds: str) -> dict[str, Any]:
    return {"properties": {"kind": {"enum": list(kinds)}}}


def _is_set(field: str) -> dict[str, Any]:
    """JSON Schema for "`field` is present and not null"."""
    return {"required": [field], "properties": {field: {"not": {"type": "null"}}}}


def _values(pattern: str) -> dict[str, Any]:
    """One value matching `pattern`, or a non-empty list of them."""
    value = {"type": "string", "pattern": pattern}
    return {"anyOf": [value, {"type": "array", "items": value, "minItems": 1}]}


def _patch(schema: dict[str, Any]) -> dict[str, Any]:
    """Rule 2: every field optional and nullable."""
    patched = copy.deepcopy(schema)
    for rule in ("required", "oneOf", "allOf", "discriminator"):  # the stored object decides
        patched.pop(rule, None)
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
