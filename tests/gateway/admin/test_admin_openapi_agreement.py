"""The admin API's OpenAPI document and its validator agree on the parts of a body the
document can describe whole: a route's targets, a binding's subjects, a policy's `deny_when`,
a key's `allowed_models`.
Each part is generated from the schema the served document gives it (schemathesis, bounded
and derandomized), placed in a body whose other fields are fixed and valid, and posted over a
real socket: what the schema accepts is created (never a 400 `VALIDATION_FAILED`), what it
refuses is refused."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode
from schemathesis.core.result import Ok

from tests.gateway.admin._support import HEADERS, StoreContext, file_config, running_in_thread
from tests.store.conftest import store_on
from turnout.store import migrate

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from schemathesis import Case

EXAMPLES = {GenerationMode.POSITIVE: 30, GenerationMode.NEGATIVE: 15}
"""Examples per part and mode."""


@pytest.fixture(scope="module")
def admin_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A gateway with the admin API over a SQLite store, in a thread of its own."""
    with store_on("sqlite", tmp_path_factory.mktemp("store"), None) as store:
        migrate(store)
        with running_in_thread(StoreContext(store, file_config())) as url:
            yield url


def _name() -> str:
    return f"g-{uuid.uuid4().hex[:12]}"


def _targets(part: Any, provider_id: str, positive: bool) -> dict[str, Any]:
    """A route of the generated targets; a positive case's references are made real, its
    targets named apart and its retries kept within the route's 10 attempts (a sum across
    targets, which no schema says)."""
    if positive:
        budget = 10 - len(part)
        for i, target in enumerate(part):
            if target.get("provider") is not None:
                target["provider"] = "p"
            if target.get("ai_provider_id") is not None:
                target["ai_provider_id"] = provider_id
            target["name"] = f"t{i}"
            target["max_retries"] = min(target.get("max_retries", 0), max(budget, 0))
            budget -= target["max_retries"]
    return {"name": _name(), "targets": part}


def _subjects(part: Any, provider_id: str, positive: bool) -> dict[str, Any]:
    if positive:
        for subject in part:
            if subject.get("key") is not None:
                subject["key"] = "k"
    return {"name": _name(), "subjects": part, "grants": [{"models": "*"}]}


def _deny_when(part: Any, provider_id: str, positive: bool) -> dict[str, Any]:
    return {"name": _name(), "deny_when": part}


def _allowed_models(part: Any, provider_id: str, positive: bool) -> dict[str, Any]:
    return {"name": _name(), "allowed_models": part}


PARTS: dict[str, tuple[str, dict[str, Any], Callable[[Any, str, bool], dict[str, Any]]]] = {
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
}


def _part_operation(url: str, schema: dict[str, Any]) -> Any:
    """An operation whose body is the part alone, over the served document's components."""
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
    return result.ok()


def _project(url: str, session: requests.Session) -> tuple[str, str]:
    """A project with a provider `p` and a key `k`: its base URL and the provider's id."""
    made = session.post(f"{url}/admin/v1/projects", headers=HEADERS, json={"name": _name()})
    base = f"{url}/admin/v1/projects/{made.json()['id']}"
    provider = session.post(
        f"{base}/providers", headers=HEADERS, json={"name": "p", "kind": "mock"}
    )
    session.post(f"{base}/keys", headers=HEADERS, json={"name": "k"})
    return base, provider.json()["id"]


@pytest.mark.parametrize("part", list(PARTS))
def test_the_document_and_the_validator_agree(admin_url: str, part: str) -> None:
    """Generated values the part's schema accepts are created; values it refuses are 4xx."""
    kind, schema, body_of = PARTS[part]
    operation = _part_operation(admin_url, schema)
    disagreements: list[str] = []
    with requests.Session() as session:
        base, provider_id = _project(admin_url, session)

        def post(value: Any, positive: bool) -> None:
            body = body_of(value, provider_id, positive)
            reply = session.post(f"{base}/{kind}", headers=HEADERS, json=body, timeout=10)
            code = reply.json().get("error", {}).get("code") if reply.status_code >= 400 else None
            if (positive and code == "VALIDATION_FAILED") or (
                not positive and reply.status_code < 400
            ):
                disagreements.append(f"{positive=} {body!r:.300} -> {reply.text:.300}")

        for mode, examples in EXAMPLES.items():
            _generate(operation, mode, examples, post)
    assert not disagreements, "\n".join(disagreements)


def _generate(
    operation: Any, mode: GenerationMode, examples: int, post: Callable[[Any, bool], None]
) -> None:
    """`post` each of `examples` bodies of `mode` (JSON ones only: a body that is not JSON
    says nothing about the schema)."""

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
        if case.media_type == "application/json" and _is_json(case.body):
            post(case.body, mode is GenerationMode.POSITIVE)

    run()


def _is_json(value: Any) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_json(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_is_json(v) for v in value)
    return value is None or isinstance(value, str | int | float | bool)
