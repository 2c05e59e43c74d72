"""The gateway's per-request plans (`turnout.gateway.resolution.request_plans`): which targets each
kind of caller gets, the client's family, caching, and the refusals before any call."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from tests.gateway._app_support import runtime_of
from turnout.access.keys import Caller, Credentials, OwnCredential
from turnout.errors import NoRoute, PolicyDenied

if TYPE_CHECKING:
    from turnout.gateway.runtime.live import Runtime
    from turnout.gateway.runtime.route_entry import Endpoint
    from turnout.routing.plan import RequestPlan, TargetRule

OWN = Credentials(None, OwnCredential("authorization", "sk-own"))
NONE = Credentials(None)
APP = Caller("default", "app")


def _runtime(**extra: Any) -> Runtime:
    config: dict[str, Any] = {
        "server": {"auth": "keys"},
        "providers": [
            {"name": "oai-byok", "kind": "openai"},
            {"name": "ant-byok", "kind": "anthropic"},
            {"name": "oai-org", "kind": "openai", "api_key": "sk-org-openai"},
            {"name": "ant-org", "kind": "anthropic", "api_key": "sk-org-anthropic"},
            {"name": "local", "kind": "openai-compatible", "preset": "ollama"},
        ],
        "routes": [
            {
                "name": "everything",
                "models": ["everything"],
                "org_key_fallback_for_caller_credentials": True,
                "targets": [
                    {"provider": "oai-org", "model": "gpt-4o"},
                    {"provider": "ant-byok", "model": "claude-x"},
                    {"provider": "oai-byok", "model": "gpt-4o"},
                    {"provider": "ant-org", "model": "claude-x"},
                    {"provider": "local", "model": "llama"},
                ],
                "fallbacks": {"general": ["spare"]},
            },
            {
                "name": "spare",
                "targets": [
                    {"provider": "oai-org", "model": "gpt-4o-mini"},
                    {"provider": "oai-byok", "model": "gpt-4o-mini"},
                ],
            },
            {"name": "orgs", "models": ["orgs"], "targets": [{"provider": "oai-org"}]},
        ],
        "keys": [{"name": "app", "key": "tk_app_key_for_tests_01"}],
        **extra,
    }
    return runtime_of(config)


def _plan(runtime: Runtime, model: str, credentials: Credentials, **kw: Any) -> RequestPlan | None:
    caller = kw.pop("caller", APP)
    resolution = runtime.resolve(model, endpoint=kw.pop("endpoint", "chat"), caller=caller)
    endpoint: Endpoint = "chat" if resolution.route is resolution.entry.route else "messages"
    return runtime.plan_for(resolution, caller, lambda: credentials, endpoint=endpoint)


def _targets(
    runtime: Runtime, plan: RequestPlan | None, route: str = "everything"
) -> dict[str, str]:
    """target name -> what the plan makes of it (`caller`, `fallback`, `own`)."""
    assert plan is not None
    engine = runtime.routes[route].route
    part = plan.for_route(engine)
    assert part is not None
    return {engine.targets[i].name: _word(rule) for i, rule in part.rules.items()}


def _word(rule: TargetRule) -> str:
    if rule.caller_credential:
        return "caller"
    return "fallback" if rule.fallback else "own"


def test_a_credential_goes_only_to_passthrough_targets_of_the_clients_family() -> None:
    """Chat completions (openai client): the caller's credential to the OpenAI passthrough
    target, never the Anthropic one; org-key fallbacks of the openai family or none."""
    runtime = _runtime()
    plan = _plan(runtime, "everything", OWN)
    assert _targets(runtime, plan) == {
        "oai-org:gpt-4o": "fallback",
        "oai-byok:gpt-4o": "caller",
        "local:llama": "fallback",
    }
    assert plan is not None
    assert plan.credential is not None
    assert plan.credential.reveal() == "sk-own"
    assert plan.credential.bearer


def test_a_caller_without_a_credential_gets_the_org_key_targets() -> None:
    """No credential of its own: every org-key target, none of the passthrough ones."""
    runtime = _runtime()
    plan = _plan(runtime, "everything", NONE)
    assert _targets(runtime, plan) == {
        "oai-org:gpt-4o": "own",
        "ant-org:claude-x": "own",
        "local:llama": "own",
    }
    assert plan is not None
    assert plan.credential is None


def test_the_filter_is_planned_for_fallback_routes_too() -> None:
    """The plan covers the fallback route, filtered the same way."""
    runtime = _runtime()
    plan = _plan(runtime, "everything", OWN)
    assert _targets(runtime, plan, "spare") == {"oai-byok:gpt-4o-mini": "caller"}


def test_the_common_case_costs_no_plan() -> None:
    """A keyed caller without a credential on a config without passthrough providers,
    policies or requirements: no plan at all."""
    runtime = runtime_of(
        {
            "server": {"auth": "keys"},
            "providers": [{"name": "oai-org", "kind": "openai", "api_key": "sk-org"}],
            "routes": [{"name": "orgs", "models": ["orgs"], "targets": [{"provider": "oai-org"}]}],
            "keys": [{"name": "app", "key": "tk_app_key_for_tests_01"}],
        }
    )
    resolution = runtime.resolve("orgs", endpoint="chat", caller=APP)
    assert runtime.plan_for(resolution, APP, lambda: NONE, endpoint="chat") is None


def test_an_all_org_key_route_needs_no_plan_for_an_org_caller() -> None:
    """Every target kept and nothing to check: the route runs as configured (None)."""
    assert _plan(_runtime(), "orgs", NONE) is None


def test_plans_are_cached_per_kind_of_caller() -> None:
    """The same route and kind of caller reuse one plan; only the credential differs."""
    runtime = _runtime()
    first = _plan(runtime, "everything", NONE)
    again = _plan(runtime, "everything", NONE)
    assert first is again
    one = _plan(runtime, "everything", OWN)
    two = _plan(runtime, "everything", OWN)
    assert one is not None
    assert two is not None
    assert one.routes is two.routes


def test_endings_name_the_route_and_the_model() -> None:
    """An empty filter on the route asked is NO_ROUTE naming the route and the model."""
    runtime = _runtime()
    with pytest.raises(NoRoute, match='route "orgs" has no passthrough target'):
        _plan(runtime, "orgs", OWN)


def test_a_deny_covering_every_target_refuses_before_any_call() -> None:
    """An enforce policy denying every target left: 403 POLICY_DENIED from the plan."""
    runtime = _runtime(policies=[{"name": "no-openai", "deny_when": {"family": "openai"}}])
    with pytest.raises(PolicyDenied, match='policy "no-openai"'):
        _plan(runtime, "orgs", NONE)


def test_requirements_of_the_key_and_the_binding_skip_targets() -> None:
    """A key requiring zero data retention skips providers that do not declare it; the
    requirement's source is named."""
    runtime = _runtime(
        providers=[
            {"name": "plain", "kind": "openai", "api_key": "sk-1"},
            {
                "name": "zdr",
                "kind": "openai",
                "api_key": "sk-2",
                "data_handling": {"zero_data_retention": True},
            },
        ],
        routes=[
            {
                "name": "r",
                "models": ["r"],
                "targets": [{"provider": "plain"}, {"provider": "zdr"}],
            }
        ],
        keys=[
            {
                "name": "strict",
                "key": "tk_strict_key_for_tests",
                "require": {"zero_data_retention": True},
            },
            {"name": "app", "key": "tk_app_key_for_tests_01"},
        ],
    )
    strict = runtime.keys.lookup("tk_strict_key_for_tests") if runtime.keys else None
    assert strict is not None
    plan = _plan(runtime, "r", NONE, caller=strict)
    assert plan is not None
    part = plan.for_route(runtime.routes["r"].route)
    assert part is not None
    assert part.rules[0].skip is not None
    assert 'key "strict"' in part.rules[0].skip
    assert part.rules[1].skip is None
    assert _plan(runtime, "r", NONE) is None  # the app key requires nothing


def test_a_credential_goes_to_one_upstream_only() -> None:
    """Two passthrough providers without a family (two `openai-compatible` vendors) are two
    audiences: the caller's credential goes only to the first one's origin, on the route asked
    and on its fallback route; a second provider at the same origin still gets it."""
    runtime = runtime_of(
        {
            "server": {"auth": "keys"},
            "providers": [
                {
                    "name": "vendor-a",
                    "kind": "openai-compatible",
                    "base_url": "https://api.vendor-a.example/v1",
                    "credential_mode": "passthrough",
                },
                {
                    "name": "vendor-a-eu",
                    "kind": "openai-compatible",
                    "base_url": "https://API.vendor-a.example/eu/v1",
                    "credential_mode": "passthrough",
                },
                {
                    "name": "vendor-b",
                    "kind": "openai-compatible",
                    "base_url": "https://api.vendor-b.example/v1",
                    "credential_mode": "passthrough",
                },
            ],
            "routes": [
                {
                    "name": "byok",
                    "models": ["byok"],
                    "targets": [
                        {"provider": "vendor-a", "model": "m"},
                        {"provider": "vendor-b", "model": "m"},
                        {"provider": "vendor-a-eu", "model": "m"},
                    ],
                    "fallbacks": {"general": ["other"]},
                },
                {"name": "other", "targets": [{"provider": "vendor-b", "model": "m"}]},
            ],
            "keys": [{"name": "app", "key": "tk_app_key_for_tests_01"}],
        }
    )
    plan = _plan(runtime, "byok", OWN)
    assert _targets(runtime, plan, "byok") == {"vendor-a:m": "caller", "vendor-a-eu:m": "caller"}
    assert plan is not None
    other = runtime.routes["other"].route
    assert plan.for_route(other) is not None
    assert _targets(runtime, plan, "other") == {}
    expected = (
        'routes[0].targets[1]: passthrough provider "vendor-b" at https://api.vendor-b.example '
        "never receives a caller's own credential: a request's credential goes to one upstream "
        "only, the route's first passthrough target's (https://api.vendor-a.example)"
    )
    assert runtime.warnings == (expected,)


def test_passthrough_targets_of_two_families_warn_about_nothing() -> None:
    """An OpenAI and an Anthropic passthrough target each serve their own client family's
    callers: neither is unreachable, so the load has no warning about them."""
    assert not [w for w in _runtime().warnings if "never receives" in w]


def test_a_familyless_passthrough_target_behind_an_openai_one_is_warned_about() -> None:
    """A groq passthrough target after an OpenAI one is never reached by a caller's credential
    (chat callers' credential goes to OpenAI; the target is not on the /v1/messages route), and
    the load says so."""
    runtime = runtime_of(
        {
            "server": {"auth": "keys"},
            "providers": [
                {"name": "openai-byok", "kind": "openai", "credential_mode": "passthrough"},
                {
                    "name": "groq-byok",
                    "kind": "openai-compatible",
                    "preset": "groq",
                    "credential_mode": "passthrough",
                },
            ],
            "routes": [
                {
                    "name": "chat",
                    "models": ["gpt-*"],
                    "targets": [{"provider": "openai-byok"}, {"provider": "groq-byok"}],
                }
            ],
            "keys": [{"name": "app", "key": "tk_app_key_for_tests_01"}],
        }
    )
    assert [w.split(":", 1)[0] for w in runtime.warnings if "never receives" in w] == [
        "routes[0].targets[1]"
    ]
