"""The admin API under generated requests from its own OpenAPI document: every operation,
bodies and parameters valid and invalid, over a real socket; no answer is a 5xx, and every
4xx is the error envelope. Each generated request is also sent without the admin key, and
must then be a 401 in the envelope whatever it holds. Bounded (a fixed number of examples per
operation) and derandomized, so a run is repeatable."""

from __future__ import annotations

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
from turnout.access.sign_ins import SignInPolicy, SignInThrottle
from turnout.store import migrate

if TYPE_CHECKING:
    from collections.abc import Iterator

    from schemathesis import APIOperation, Case

    Operation = APIOperation[Any, Any, Any, Any]

POSITIVE = 12
"""Examples per operation of requests that follow the document."""
NEGATIVE = 9
"""Examples per operation with a body of requests that break it (slower to generate)."""


def _settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )


@pytest.fixture(scope="module")
def admin_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A gateway with the admin API over a SQLite store, in a thread of its own. Generated
    cases carry wrong admin keys by the thousand: the throttle of failed keys (tested on its
    own) is set past them, so every refusal stays the 401 this test checks."""
    unthrottled = SignInThrottle(SignInPolicy(limit=1_000_000))
    with store_on("sqlite", tmp_path_factory.mktemp("store"), None) as store:
        migrate(store)
        with running_in_thread(StoreContext(store, file_config()), unthrottled) as url:
            yield url


def _operations(url: str) -> list[Operation]:
    document = httpx.get(f"{url}/admin/v1/openapi.json", headers=HEADERS).json()
    schema = schemathesis.openapi.from_dict(document)
    found = []
    for result in schema.get_all_operations():
        assert isinstance(result, Ok), result
        found.append(result.ok())
    return found


def _modes(operation: Operation) -> list[tuple[GenerationMode, int]]:
    modes = [(GenerationMode.POSITIVE, POSITIVE)]
    if operation.body:
        modes.append((GenerationMode.NEGATIVE, NEGATIVE))
    return modes


def _check(case: Case[Any], reply: Any) -> None:
    where = f"{case.method} {case.formatted_path} -> {reply.status_code}: {reply.text[:300]}"
    assert reply.status_code < 500, where
    if reply.status_code >= 400:
        body = reply.json()
        assert set(body) == {"error"}, where
        assert set(body["error"]) == {"code", "message", "meta"}, where
        assert isinstance(body["error"]["meta"], dict), where


def _check_refused(case: Case[Any], reply: Any) -> None:
    where = f"{case.method} {case.formatted_path} without a key -> {reply.status_code}"
    assert reply.status_code == 401, where
    assert reply.json()["error"]["code"] == "invalid_admin_key", where


def test_generated_requests_never_fail_the_server(admin_url: str) -> None:
    """At least 1,000 requests from generated cases over every operation (inside a real
    project where the path has one, so they reach the store): no 5xx, every 4xx in the
    envelope, every one without the key a 401."""
    project = httpx.post(f"{admin_url}/admin/v1/projects", headers=HEADERS, json={"name": "fz"})
    inside = {"project_id": project.json()["id"]}
    sent = 0
    operations = _operations(admin_url)
    with requests.Session() as session:
        for operation in operations:
            # The project itself is fuzzed by id too, but not deleted from under the others.
            nested = operation.path.count("/") > 4
            for mode, examples in _modes(operation):
                strategy = operation.as_strategy(
                    generation_mode=mode, path_parameters=inside if nested else None
                )

                @_settings(examples)
                @given(case=strategy)
                def run(case: Case[Any]) -> None:
                    nonlocal sent
                    reply = case.call(
                        base_url=admin_url, headers=HEADERS, session=session, timeout=10
                    )
                    _check(case, reply)
                    bare = case.call(base_url=admin_url, session=session, timeout=10)
                    _check_refused(case, bare)
                    sent += 2

                run()
    assert len(operations) >= 35
    assert sent >= 1000
