"""The admin API's OpenAPI document and its validator agree on the parts of a body the
document can describe whole: a route's targets, a binding's subjects, a policy's `deny_when`,
a key's `allowed_models`, a whole provider body of each kind, a whole consumer body; and on
PATCH bodies, which the document refuses are refused.
Each part is generated from the schema the served document gives it (schemathesis, bounded
and derandomized), placed in a body whose other fields are fixed and valid, and posted over a
real socket: what the schema accepts is created (never a 400 `VALIDATION_FAILED`), what it
refuses is refused.

Rules of the validator that JSON Schema cannot express, so the document leaves them out and a
positive case is made to keep them before it is posted:
- a reference names an object that exists in the project (a target's provider, a binding's
  key, a consumer's route, provider or agent, which must also be an agent);
- a consumer's reference by id and by name, when both are given, name the same object;
- a consumer with neither a route nor a provider pin inherits the project's default route,
  so it needs the project to have one (the test's project has);
- a route makes at most 10 attempts, summed over its targets' retries;
- names are unique in their project (providers and routes together, ignoring case);
- a mock provider's script steps follow the mock upstream's fault grammar;
- a provider secret given as the mask keeps the stored one, so it needs one stored;
- a vertex or bedrock provider needs its extra installed;
- whether a PATCH the document accepts is taken depends on the object it merges into."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, get_args

import httpx
import jsonschema_rs
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode
from schemathesis.core.result import Ok

from tests.gateway.admin._support import HEADERS, StoreContext, file_config, running_in_thread
from tests.store.conftest import store_on
from turnout.schema._base import ProviderKind
from turnout.store import migrate

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from schemathesis import Case

EXAMPLES = {GenerationMode.POSITIVE: 30, GenerationMode.NEGATIVE: 15}
"""Examples per part and mode."""
KIND_EXAMPLES = {GenerationMode.POSITIVE: 8, GenerationMode.NEGATIVE: 4}
"""Examples of whole provider bodies, per kind."""
PATCH_EXAMPLES = 10
"""Refused examples per PATCH body."""


@pytest.fixture(scope="module")
def admin_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A gateway with the admin API over a SQLite store, in a thread of its own."""
    with store_on("sqlite", tmp_path_factory.mktemp("store"), None) as store:
        migrate(store)
        with running_in_thread(StoreContext(store, file_config())) as url:
            yield url


def _name() -> str:
    return f"g-{uuid.uuid4().hex[:12]}"


def _targets(part: Any, ids: dict[str, str], positive: bool) -> dict[str, Any]:
    """A route of the generated targets; a positive case's references are made real, its
    targets named apart and its retries kept within the route's 10 attempts (a sum across
    targets, which no schema says)."""
    if positive:
        budget = 10 - len(part)
        for i, target in enumerate(part):
            if target.get("provider") is not None:
                target["provider"] = "p"
            if target.get("ai_provider_id") is not None:
                target["ai_provider_id"] = ids["provider"]
            target["name"] = f"t{i}"
            target["max_retries"] = min(target.get("max_retries", 0), max(budget, 0))
            budget -= target["max_retries"]
    return {"name": _name(), "targets": part}


def _subjects(part: Any, ids: dict[str, str], positive: bool) -> dict[str, Any]:
    if positive:
        for subject in part:
            if subject.get("key") is not None:
                subject["key"] = "k"
    return {"name": _name(), "subjects": part, "grants": [{"models": "*"}]}


def _deny_when(part: Any, ids: dict[str, str], positive: bool) -> dict[str, Any]:
    return {"name": _name(), "deny_when": part}


def _allowed_models(part: Any, ids: dict[str, str], positive: bool) -> dict[str, Any]:
    return {"name": _name(), "allowed_models": part}


def _provider(part: Any, ids: dict[str, str], positive: bool) -> dict[str, Any]:
    """A generated provider body; a positive one is named apart, and a mock's script is
    emptied (its steps follow the mock upstream's fault grammar, which no schema says)."""
    body: dict[str, Any] = part
    if positive:
        body["name"] = _name()
        if body.get("script"):
            body["script"] = []
    return body


def _consumer(part: Any, ids: dict[str, str], positive: bool) -> dict[str, Any]:
    """A generated consumer body; a positive one is named apart and its references made
    real (the provider `p`, the route `r`, no agent)."""
    body: dict[str, Any] = part
    if positive:
        body["name"] = _name()
        real = {
            "ai_provider_id": ids["provider"],
            "provider": "p",
            "model_route_id": ids["route"],
            "model_route": "r",
        }
        for field in (*real, "agent_id", "agent"):
            if body.get(field) is not None:
                body[field] = real.get(field)
    return body


PARTS: dict[
    str, tuple[str, dict[str, Any], Callable[[Any, dict[str, str], bool], dict[str, Any]]]
] = {
    "targets": (
        "routes",
        {"$ref": "#/components/schemas/RouteBody/properties/targets"},
        _targets,
    ),
    "subjects": (
        "bindings",
        {"type": "array", "minItems": 1, "items": {"$ref": "#/components/schemas/SubjectConfig"}},
        _subjects,
    ),
    "deny_when": (
        "policies",
        {"$ref": "#/components/schemas/PolicyConfig/properties/deny_when"},
        _deny_when,
    ),
    "allowed_models": (
        "keys",
        {"$ref": "#/components/schemas/KeyBody/properties/allowed_models"},
        _allowed_models,
    ),
    "consumers": ("consumers", {"$ref": "#/components/schemas/ConsumerBody"}, _consumer),
}
PARTS.update(
    (
        f"providers:{kind}",
        (
            "providers",
            {
                "allOf": [{"$ref": "#/components/schemas/ProviderConfig"}],
                "properties": {"kind": {"const": kind}},
            },
            _provider,
        ),
    )
    for kind in get_args(ProviderKind)
)


def _part_operation(url: str, schema: dict[str, Any]) -> tuple[Any, Callable[[Any], bool]]:
    """An operation whose body is the part alone, over the served document's components, and
    whether a value is valid by the part's schema."""
    served = httpx.get(f"{url}/admin/v1/openapi.json", headers=HEADERS).json()
    document = {
        "openapi": "3.1.0",
        "info": {"title": "part", "version": "1"},
        "paths": {
            "/part": {
                "post": {
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": schema}},
                    },
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
        "components": served["components"],
    }
    [result] = list(schemathesis.openapi.from_dict(document).get_all_operations())
    assert isinstance(result, Ok), result
    checked = jsonschema_rs.Draft202012Validator({**schema, "components": served["components"]})
    return result.ok(), checked.is_valid


def _project(url: str, session: requests.Session) -> tuple[str, dict[str, str]]:
    """A project with a provider `p`, a key `k` and a route `r` (its default route): its
    base URL and the ids of `p` and `r`."""
    made = session.post(f"{url}/admin/v1/projects", headers=HEADERS, json={"name": _name()})
    base = f"{url}/admin/v1/projects/{made.json()['id']}"
    provider = session.post(
        f"{base}/providers", headers=HEADERS, json={"name": "p", "kind": "mock"}
    )
    session.post(f"{base}/keys", headers=HEADERS, json={"name": "k"})
    route: dict[str, Any] = {"name": "r", "targets": [{"provider": "p"}]}
    route_id = session.post(f"{base}/routes", headers=HEADERS, json=route).json()["id"]
    default = {"default_model_route_id": route_id}  # so a consumer may leave out its route
    session.patch(base, headers=HEADERS, json=default).raise_for_status()
    return base, {"provider": provider.json()["id"], "route": route_id}


@pytest.mark.parametrize("part", list(PARTS))
def test_the_document_and_the_validator_agree(admin_url: str, part: str) -> None:
    """Generated values the part's schema accepts are created; values it refuses are 4xx."""
    kind, schema, body_of = PARTS[part]
    operation, is_valid = _part_operation(admin_url, schema)
    disagreements: list[str] = []
    created: list[dict[str, Any]] = []
    with requests.Session() as session:
        base, ids = _project(admin_url, session)

        def post(value: Any, positive: bool) -> None:
            body = body_of(value, ids, positive)
            reply = session.post(f"{base}/{kind}", headers=HEADERS, json=body, timeout=10)
            code = reply.json().get("error", {}).get("code") if reply.status_code >= 400 else None
            if (positive and code == "VALIDATION_FAILED") or (
                not positive and reply.status_code < 400
            ):
                disagreements.append(f"{positive=} {body!r:.300} -> {reply.text:.300}")
            elif positive:
                created.append(body)

        counts = KIND_EXAMPLES if part.startswith("providers:") else EXAMPLES
        for mode, examples in counts.items():
            _generate(operation, mode, examples, post, is_valid)
    assert not disagreements, "\n".join(disagreements)
    assert created, "no generated body was created"


PATCHES: dict[str, tuple[str, dict[str, Any] | None]] = {
    "ProjectBodyPatch": ("", None),
    "ProviderConfigPatch": ("providers", {"name": "q", "kind": "mock"}),
    "RouteBodyPatch": ("routes", {"name": "s", "targets": [{"provider": "p"}]}),
    "KeyBodyPatch": ("keys", {"name": "j"}),
    "BindingConfigPatch": (
        "bindings",
        {"name": "b", "subjects": [{"key": "k"}], "grants": [{"models": "*"}]},
    ),
    "PolicyConfigPatch": ("policies", {"name": "n", "deny_when": {"family": "openai"}}),
    "ConsumerBodyPatch": ("consumers", {"name": "c", "kind": "agent"}),
}
"""Each PATCH body's schema: the collection and the object a generated patch is sent to (the
project itself for a project's patch). Only patches the schema refuses are checked: whether a
patch the schema accepts is taken depends on the stored object it merges into, which no
schema of the patch alone can say."""


@pytest.mark.parametrize("schema", list(PATCHES))
def test_a_patch_the_document_refuses_is_refused(admin_url: str, schema: str) -> None:
    """Generated PATCH bodies that the body's patch schema refuses are 4xx, never applied."""
    collection, made = PATCHES[schema]
    operation, is_valid = _part_operation(admin_url, {"$ref": f"#/components/schemas/{schema}"})
    accepted: list[str] = []
    with requests.Session() as session:
        base, _ = _project(admin_url, session)
        url = base
        if made is not None:
            reply = session.post(f"{base}/{collection}", headers=HEADERS, json=made)
            url = f"{base}/{collection}/{reply.json()['id']}"

        def patch(value: Any, positive: bool) -> None:
            reply = session.patch(url, headers=HEADERS, json=value, timeout=10)
            if reply.status_code < 400:
                accepted.append(f"{value!r:.300} -> {reply.text:.300}")

        _generate(operation, GenerationMode.NEGATIVE, PATCH_EXAMPLES, patch, is_valid)
    assert not accepted, "\n".join(accepted)


def _generate(
    operation: Any,
    mode: GenerationMode,
    examples: int,
    post: Callable[[Any, bool], None],
    is_valid: Callable[[Any], bool],
) -> None:
    """`post` each of `examples` bodies of `mode` (JSON ones only: a body that is not JSON
    says nothing about the schema; and a negative one only when the schema does refuse it,
    which a mutation does not always achieve)."""

    @settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def run(case: Case[Any]) -> None:
        positive = mode is GenerationMode.POSITIVE
        if case.media_type != "application/json" or not _is_json(case.body):
            return
        if positive or not is_valid(case.body):
            post(case.body, positive)

    run()


def _is_json(value: Any) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_json(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_is_json(v) for v in value)
    return value is None or isinstance(value, str | int | float | bool)
