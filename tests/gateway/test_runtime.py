"""The runtime: configuration -> providers, health, engine routes, implicit and family routes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from turnout.access.keys import KeyRing
from turnout.config.load import parse_config
from turnout.errors import AuthenticationFailed, ConfigError
from turnout.gateway.resolution.lookups import build_runtime, embedded_runtime
from turnout.gateway.runtime.live import Runtime, StoredFacts
from turnout.mock_upstream.answers import MODELS
from turnout.providers import Anthropic, AzureOpenAI, MockProvider, OpenAI, OpenAICompatible
from turnout.routing.clock import FakeClock
from turnout.routing.plan import CallerCredential
from turnout.schema import FileConfig
from turnout.wire.model import ChatRequest, Message

if TYPE_CHECKING:
    from turnout.routing.route import Route

OPENAI = {"name": "openai", "kind": "openai", "api_key": "sk-test"}
ANTHROPIC = {"name": "anthropic", "kind": "anthropic", "api_key": "sk-ant-test"}


def runtime_of(data: dict[str, Any], **options: Any) -> Runtime:
    """A runtime from a configuration document (no environment)."""
    return build_runtime(parse_config(data, env={}), **options)


def target_names(route: Route | None) -> list[str]:
    """The target names of a route, in list order."""
    assert route is not None
    return [target.name for target in route.targets]


def question(model: str) -> ChatRequest:
    """A one-message request for `model`."""
    return ChatRequest(messages=[Message.user("Why is checkout failing?")], model=model)


# ---- providers -------------------------------------------------------------------------------


def test_each_provider_kind_builds_its_adapter() -> None:
    """kind -> class, with base_url, preset, wire and api_version passed on."""
    runtime = runtime_of(
        {
            "providers": [
                {**OPENAI, "base_url": "http://127.0.0.1:9/v1"},
                ANTHROPIC,
                {"name": "local", "kind": "openai-compatible", "preset": "ollama"},
                {
                    "name": "az",
                    "kind": "azure-openai",
                    "wire": "anthropic-messages",
                    "base_url": "https://x.services.ai.azure.com/anthropic",
                    "api_version": "2025-01-01",
                },
                {"name": "m", "kind": "mock", "model_patterns": ["m-*"]},
            ]
        }
    )
    providers = runtime.providers
    assert isinstance(providers["openai"], OpenAI)
    assert providers["openai"].base_url == "http://127.0.0.1:9/v1"
    assert isinstance(providers["anthropic"], Anthropic)
    assert isinstance(providers["local"], OpenAICompatible)
    assert providers["local"].base_url == "http://127.0.0.1:11434/v1"
    assert isinstance(providers["az"], AzureOpenAI)
    assert providers["az"].wire_format == "anthropic-messages"
    assert providers["az"].api_version == "2025-01-01"
    assert isinstance(providers["m"], MockProvider)


def test_provider_options_reach_the_adapter() -> None:
    """Prices (USD per 1M), model aliases, headers and connect_timeout are applied."""
    provider = {
        **OPENAI,
        "prices": {"gpt-4o-mini": {"input": 0.15, "output": 0.6}},
        "model_aliases": {"mini": "gpt-4o-mini"},
        "headers": {"X-Team": "platform"},
        "connect_timeout": 3,
    }
    adapter = runtime_of({"providers": [provider]}).providers["openai"]
    assert adapter.price_for("gpt-4o-mini") == (0.15, 0.6)
    assert adapter.wire_model("mini") == "gpt-4o-mini"
    assert adapter.timeouts.connect == 3
    headers = adapter.call_headers(question("gpt-4o-mini"))
    assert headers["x-team"] == "platform"
    assert headers["authorization"] == "Bearer sk-test"


def test_a_provider_without_api_key_sends_no_credential(monkeypatch: pytest.MonkeyPatch) -> None:
    """A configured provider never picks up OPENAI_API_KEY by itself; only ${VAR} reads it:
    keyless, it is passthrough, refuses a call without the caller's credential and sends only
    the caller's when it has one."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    runtime = runtime_of({"providers": [{"name": "byok", "kind": "openai"}]})
    provider = runtime.providers["byok"]
    with pytest.raises(AuthenticationFailed):
        provider.call_headers(question("gpt-4o"))
    bound = provider.with_credential(CallerCredential("sk-caller"))
    assert bound.call_headers(question("gpt-4o"))["authorization"] == "Bearer sk-caller"
    assert runtime.credential_modes["byok"] == "passthrough"


def test_credential_modes_follow_the_spec_defaults() -> None:
    """A key, a keyless preset or mock -> org_key; no key -> passthrough; explicit wins."""
    runtime = runtime_of(
        {
            "providers": [
                OPENAI,
                {"name": "local", "kind": "openai-compatible", "preset": "ollama"},
                {"name": "groq", "kind": "openai-compatible", "preset": "groq"},
                {**ANTHROPIC, "credential_mode": "passthrough"},
            ]
        }
    )
    assert dict(runtime.credential_modes) == {
        "openai": "org_key",
        "local": "org_key",
        "groq": "passthrough",
        "anthropic": "passthrough",
    }


# ---- routes ----------------------------------------------------------------------------------

FULL_ROUTE: dict[str, Any] = {
    "name": "main",
    "models": ["gpt-4o-mini"],
    "strategy": {"type": "lowest-latency", "window_minutes": 5},
    "retry_on": ["provider_error", "timeout"],
    "retryable_statuses": [502, 503, 504],
    "fail_over_on_refusal": False,
    "max_attempts": 4,
    "request_timeout": 45,
    "stream_idle_timeout": 20,
    "cost_budget": 0.5,
    "hedge_after": 2,
    "when_all_unhealthy": "fail",
    "circuit_breaker": {"failure_threshold": 5, "cooldown_seconds": 30},
    "commit_on_headers": True,
    "targets": [
        {
            "provider": "openai",
            "model": "gpt-4o-mini",
            "name": "primary",
            "timeout": 30,
            "first_token_timeout": 10,
            "max_retries": 1,
            "weight": 3,
            "health_key": "openai-main",
            "context_window": 128000,
            "capabilities": ["tools", "embeddings"],
        },
        {"provider": "anthropic", "model": "claude-x", "fallback_only": True, "paused": True},
    ],
}


def test_target_options_reach_the_engine_target() -> None:
    """Every target option of the file lands on the engine `Target`."""
    entry = runtime_of({"providers": [OPENAI, ANTHROPIC], "routes": [FULL_ROUTE]}).routes["main"]
    primary, backup = entry.route.targets
    assert (primary.name, primary.model, primary.timeout, primary.first_token_timeout) == (
        "primary",
        "gpt-4o-mini",
        30,
        10,
    )
    assert (primary.max_retries, primary.weight, primary.health_key) == (1, 3, "openai-main")
    assert primary.context_window == 128000
    assert primary.capabilities == frozenset({"tools", "embeddings"})
    assert isinstance(primary.client, OpenAI)
    assert (backup.name, backup.fallback_only, backup.paused) == ("anthropic:claude-x", True, True)


def test_route_options_reach_the_engine_route() -> None:
    """Every route option of the file lands on the engine `Route`."""
    entry = runtime_of({"providers": [OPENAI, ANTHROPIC], "routes": [FULL_ROUTE]}).routes["main"]
    route = entry.route
    assert route.strategy.type == "lowest-latency"
    assert route.retry.retry_on == frozenset({"provider_error", "timeout"})
    assert route.retry.retryable_statuses == frozenset({502, 503, 504})
    assert route.retry.fail_over_on_refusal is False
    assert route.retry.max_attempts == 4
    assert (route.timeouts.request, route.timeouts.stream_idle, route.timeouts.hedge_after) == (
        45,
        20,
        2,
    )
    assert route.cost_budget == 0.5
    assert route.when_all_unhealthy == "fail"
    assert route.breaker is not None
    assert (route.breaker.failures, route.breaker.open_for) == (5, 30)
    assert entry.commit_on_headers is True
    assert entry.patterns == ("gpt-4o-mini",)
    assert entry.kind == "configured"
    assert entry.config is not None


def test_one_health_from_the_defaults_for_every_route() -> None:
    """`defaults.circuit_breaker` and `health_key_by` make the one registry all routes share."""
    clock = FakeClock()
    runtime = runtime_of(
        {
            "defaults": {
                "circuit_breaker": {"failure_threshold": 7, "cooldown_seconds": 15},
                "health_key_by": "provider",
            },
            "providers": [OPENAI, ANTHROPIC],
            "routes": [FULL_ROUTE],
        },
        clock=clock,
    )
    health = runtime.health
    assert (health.breaker.failures, health.breaker.open_for, health.key_by) == (7, 15, "provider")
    assert health.clock is clock
    routes = [
        route
        for entry in runtime.routes.values()
        for route in (entry.route, entry.messages_route, entry.embeddings_route)
        if route is not None
    ]
    assert len(routes) > 3
    assert all(route.health is health for route in routes)


def test_fallbacks_are_the_fallback_routes_engine_objects() -> None:
    """A route's fallbacks are the Route objects of the routes it names, per kind."""
    runtime = runtime_of(
        {
            "providers": [OPENAI],
            "routes": [
                {
                    "name": "a",
                    "targets": [{"provider": "openai", "model": "gpt-4o-mini"}],
                    "fallbacks": {"general": ["b"], "context": ["c"]},
                },
                {
                    "name": "b",
                    "targets": [{"provider": "openai", "model": "gpt-4o"}],
                    "fallbacks": {"general": ["c"]},
                },
                {"name": "c", "targets": [{"provider": "openai", "model": "gpt-4.1"}]},
            ],
        }
    )
    a, b, c = (runtime.routes[name].route for name in "abc")
    assert a.fallbacks.general == (b,)
    assert a.fallbacks.context == (c,)
    assert b.fallbacks.general == (c,)


def test_derived_routes_share_the_strategy_and_fall_back_per_endpoint() -> None:
    """The messages route shares its route's strategy; its fallback is the fallback's
    messages route."""
    runtime = runtime_of(
        {
            "providers": [OPENAI, ANTHROPIC],
            "routes": [
                {
                    "name": "a",
                    "strategy": "round-robin",
                    "targets": [
                        {"provider": "anthropic", "model": "claude-x"},
                        {"provider": "openai", "model": "gpt-4o"},
                    ],
                    "fallbacks": {"general": ["b"]},
                },
                {
                    "name": "b",
                    "targets": [
                        {"provider": "openai", "model": "gpt-4o-mini"},
                        {"provider": "anthropic", "model": "claude-y"},
                    ],
                },
            ],
        }
    )
    a, b = runtime.routes["a"], runtime.routes["b"]
    assert a.messages_route is not None
    assert a.messages_route.strategy is a.route.strategy
    assert a.messages_route.name == "a"
    assert a.messages_route.fallbacks.general == (b.messages_route,)
    assert a.route.fallbacks.general == (b.route,)


def test_disabled_routes_are_not_served_and_free_their_providers() -> None:
    """A disabled route is not an entry; a provider only it uses gets its implicit route."""
    runtime = runtime_of(
        {
            "providers": [OPENAI],
            "routes": [
                {
                    "name": "off",
                    "enabled": False,
                    "targets": [{"provider": "openai", "model": "gpt-4o"}],
                }
            ],
        }
    )
    assert "off" not in runtime.routes
    assert runtime.routes["openai"].kind == "implicit"


# ---- implicit and family routes --------------------------------------------------------------


def test_implicit_routes_serve_family_defaults_or_own_patterns() -> None:
    """A provider in no route gets a route named after it: own patterns, else its family's."""
    runtime = runtime_of(
        {
            "providers": [
                OPENAI,
                {
                    "name": "local",
                    "kind": "openai-compatible",
                    "preset": "ollama",
                    "model_patterns": ["llama*"],
                },
            ]
        }
    )
    openai, local = runtime.routes["openai"], runtime.routes["local"]
    assert (openai.kind, openai.config) == ("implicit", None)
    assert openai.patterns == ("gpt-*", "o1-*", "o3-*", "o4-*", "chatgpt-*", "openai/*")
    assert local.patterns == ("llama*",)
    assert target_names(openai.route) == ["openai"]
    assert openai.route.targets[0].model is None


def test_implicit_route_drops_patterns_a_route_already_has() -> None:
    """A stored route's pattern is not repeated in an implicit route."""
    runtime = runtime_of(
        {
            "providers": [OPENAI, ANTHROPIC],
            "routes": [
                {
                    "name": "gpt",
                    "models": ["gpt-*"],
                    "targets": [{"provider": "anthropic", "model": "claude-x"}],
                }
            ],
        }
    )
    assert "gpt-*" not in runtime.routes["openai"].patterns
    assert "anthropic" not in runtime.routes


def test_family_less_provider_without_patterns_gets_no_route_and_a_warning() -> None:
    """A mock provider in no route and without patterns is not served; the load warns."""
    runtime = runtime_of({"providers": [{"name": "m", "kind": "mock"}]})
    assert "m" not in runtime.routes
    assert runtime.warnings == (
        (
            'providers[0]: provider "m" is in no enabled route and has no model_patterns, so it'
            " gets no implicit route: add model_patterns or put it in a route"
        ),
    )


@pytest.mark.parametrize(("kind", "family"), [("openai", "openai"), ("anthropic", "anthropic")])
def test_a_family_of_more_than_ten_providers_is_served(kind: str, family: str) -> None:
    """12 providers of one kind: the file loads, the family route holds all 12, allows at most
    10 calls per request, and nothing warns about its size."""
    providers = [{"name": f"{kind}-{i}", "kind": kind, "api_key": "k"} for i in range(12)]
    runtime = runtime_of({"providers": providers})
    entry = runtime.routes[f"{family}-family"]
    assert entry.route is not None
    assert len(entry.route.targets) == 12
    assert entry.route.retry.max_attempts == 10
    assert not [warning for warning in runtime.warnings if f"{family}-family" in warning]


def test_family_routes_hold_every_provider_of_their_family() -> None:
    """`openai-family` / `anthropic-family` exist per family present, routed or not."""
    runtime = runtime_of(
        {
            "providers": [OPENAI, {**OPENAI, "name": "openai-eu"}, ANTHROPIC],
            "routes": [{"name": "r", "targets": [{"provider": "openai", "model": "gpt-4o"}]}],
        }
    )
    family = runtime.routes["openai-family"]
    assert family.kind == "family"
    assert target_names(family.route) == ["openai", "openai-eu"]
    assert target_names(runtime.routes["anthropic-family"].route) == ["anthropic"]
    assert family.messages_route is None
    assert runtime.routes["anthropic-family"].embeddings_route is None


# ---- endpoint routes -------------------------------------------------------------------------


def test_messages_route_keeps_anthropic_targets_and_warns() -> None:
    """Without allow_cross_provider only Anthropic-speaking targets serve /v1/messages."""
    runtime = runtime_of(
        {
            "providers": [OPENAI, ANTHROPIC],
            "routes": [
                {
                    "name": "mixed",
                    "targets": [
                        {"provider": "openai", "model": "gpt-4o"},
                        {"provider": "anthropic", "model": "claude-x"},
                    ],
                }
            ],
        }
    )
    entry = runtime.routes["mixed"]
    assert target_names(entry.route) == ["openai:gpt-4o", "anthropic:claude-x"]
    assert target_names(entry.messages_route) == ["anthropic:claude-x"]
    assert target_names(entry.embeddings_route) == ["openai:gpt-4o"]
    assert runtime.warnings == (
        (
            'routes[0].targets[0]: target "openai:gpt-4o" of route "mixed" does not serve'
            " /v1/messages: it does not speak Anthropic Messages and the route does not set"
            " allow_cross_provider"
        ),
    )


def test_cross_provider_route_serves_messages_with_every_mapped_target() -> None:
    """With allow_cross_provider every target with a model mapping serves /v1/messages."""
    runtime = runtime_of(
        {
            "providers": [OPENAI, ANTHROPIC],
            "routes": [
                {
                    "name": "any",
                    "allow_cross_provider": True,
                    "targets": [
                        {"provider": "openai", "model": "gpt-4o"},
                        {"provider": "anthropic", "model": "claude-x"},
                    ],
                }
            ],
        }
    )
    entry = runtime.routes["any"]
    assert target_names(entry.messages_route) == ["openai:gpt-4o", "anthropic:claude-x"]
    assert runtime.warnings == ()


def test_targets_without_embeddings_capability_are_left_out_of_embeddings() -> None:
    """A target whose capabilities omit embeddings does not serve /v1/embeddings."""
    runtime = runtime_of(
        {
            "providers": [OPENAI],
            "routes": [
                {
                    "name": "r",
                    "targets": [
                        {"provider": "openai", "model": "gpt-4o", "capabilities": ["tools"]},
                        {"provider": "openai", "model": "text-embedding-3-small"},
                    ],
                }
            ],
        }
    )
    assert target_names(runtime.routes["r"].embeddings_route) == ["openai:text-embedding-3-small"]
    assert runtime.routes["r"].messages_route is None
    assert runtime.routes["r"].reasons["messages"] == (
        'route "r" has no target that can serve Anthropic Messages (/v1/messages)'
    )


def test_an_endpoint_subset_the_engine_refuses_is_unserved_with_the_reason() -> None:
    """A weighted route whose only Anthropic target has weight 0 cannot serve /v1/messages."""
    runtime = runtime_of(
        {
            "providers": [OPENAI, ANTHROPIC],
            "routes": [
                {
                    "name": "w",
                    "strategy": "weighted",
                    "targets": [
                        {"provider": "openai", "model": "gpt-4o"},
                        {"provider": "anthropic", "model": "claude-x", "weight": 0},
                    ],
                }
            ],
        }
    )
    entry = runtime.routes["w"]
    assert entry.messages_route is None
    assert entry.reasons["messages"] == (
        'route "w" cannot serve /v1/messages: a weighted route needs a target that is not'
        " fallback_only with a weight above 0"
    )


def test_alias_routes_are_precomputed_with_wire_models() -> None:
    """An alias route holds the mapped targets only, each asking for the alias's model."""
    runtime = runtime_of(
        {
            "providers": [OPENAI, ANTHROPIC, {**OPENAI, "name": "spare"}],
            "routes": [
                {
                    "name": "main",
                    "aliases": {"Fast": {"openai": "gpt-4o-mini", "anthropic": "claude-haiku"}},
                    "targets": [
                        {"provider": "openai", "model": "gpt-4o"},
                        {"provider": "spare", "model": "gpt-4o"},
                        {"provider": "anthropic", "model": "claude-sonnet"},
                    ],
                }
            ],
        }
    )
    alias = runtime.routes["main"].aliases["fast"]
    assert alias.alias == "Fast"
    assert [(t.name, t.model) for t in alias.routes["chat"].targets] == [
        ("openai:gpt-4o", "gpt-4o-mini"),
        ("anthropic:claude-sonnet", "claude-haiku"),
    ]
    assert [t.model for t in alias.routes["messages"].targets] == ["claude-haiku"]
    assert alias.providers == ("openai", "anthropic")


# ---- keys, validation, embedded --------------------------------------------------------------


def test_keys_are_a_ring_with_auth_keys_and_none_when_open() -> None:
    """`server.auth: keys` gives a KeyRing of the file's keys; `open` gives None."""
    keys = [{"name": "app", "key": "app-key-123"}]
    closed = runtime_of({"providers": [OPENAI], "keys": keys})
    assert isinstance(closed.keys, KeyRing)
    assert closed.keys.lookup("app-key-123") is not None
    opened = runtime_of({"server": {"auth": "open"}, "providers": [OPENAI], "keys": keys})
    assert opened.keys is None


def test_from_config_runs_the_one_validator() -> None:
    """A configuration built in code that breaks a rule is refused with every error."""
    config = FileConfig.model_validate(
        {"routes": [{"name": "a", "targets": [{"provider": "ghost"}]}]}
    )
    with pytest.raises(ConfigError) as info:
        build_runtime(config)
    assert info.value.errors == (
        ("routes[0].targets[0].provider", "no provider named 'ghost' in the project"),
    )


def test_a_loaded_configuration_is_validated_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The file loader's check stands for the runtime built from the same configuration: the
    rules run once. A changed copy, or the same configuration with a stored default route, is
    checked again, and a broken copy is still refused with its errors."""
    from turnout.config import rules

    runs: list[int] = []
    check_names = rules._check_names

    def counted(config: FileConfig) -> list[tuple[str, str]]:
        runs.append(len(config.routes))
        return check_names(config)

    monkeypatch.setattr(rules, "_check_names", counted)
    route = {"name": "chat", "models": ["chat"], "targets": [{"provider": "openai"}]}
    config = parse_config({"providers": [OPENAI], "routes": [route]}, env={})
    assert runs == [1]
    build_runtime(config)
    assert runs == [1]
    build_runtime(config, stored=StoredFacts(default_route="chat"))
    assert runs == [1, 1]
    broken = config.model_copy(update={"routes": (*config.routes, config.routes[0])})
    with pytest.raises(ConfigError) as info:
        build_runtime(broken)
    assert runs == [1, 1, 2]
    assert info.value.errors == (("routes[1].name", "name 'chat' is already taken by routes[0]"),)


def test_embedded_without_keys_serves_the_mock_on_every_endpoint() -> None:
    """No vendor key: one mock provider answers any model, chat and messages, offline."""
    runtime = embedded_runtime({})
    assert runtime.config.server.auth == "open"
    assert runtime.config.server.host == "127.0.0.1"
    assert runtime.keys is None
    assert list(runtime.providers) == ["mock"]
    entry = runtime.routes["mock"]
    assert (entry.kind, entry.patterns[0]) == ("implicit", "*")
    assert runtime.resolve("any-model-at-all", endpoint="chat").entry is entry
    assert entry.messages_route is entry.route
    assert entry.embeddings_route is not None
    assert runtime.warnings == (
        (
            "no OPENAI_API_KEY or ANTHROPIC_API_KEY is set: the built-in mock provider answers"
            " every model"
        ),
    )


def test_embedded_mock_lists_the_mock_upstreams_models() -> None:
    """Without vendor keys, `GET /v1/models` offers the mock upstream's own model list (a
    `*` pattern alone names no model to list), each served by the mock."""
    runtime = embedded_runtime({})
    assert runtime.lookups.models() == sorted(MODELS, key=str.lower)
    assert {runtime.resolve(name, endpoint="chat").entry.name for name in MODELS} == {"mock"}


def test_embedded_with_vendor_keys_builds_their_providers() -> None:
    """OPENAI_API_KEY / ANTHROPIC_API_KEY give openai and anthropic providers, no mock."""
    runtime = embedded_runtime(
        {
            "OPENAI_API_KEY": "sk-a",
            "ANTHROPIC_API_KEY": "sk-b",
            "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        }
    )
    assert list(runtime.providers) == ["openai", "anthropic"]
    assert runtime.providers["openai"].base_url == "http://127.0.0.1:9/v1"
    assert set(runtime.routes) == {"openai", "anthropic", "openai-family", "anthropic-family"}
    assert runtime.warnings == ()


async def test_a_configured_mock_route_fails_over_by_its_script() -> None:
    """Config -> live route: the scripted 503 of the first mock fails over to the second."""
    runtime = runtime_of(
        {
            "providers": [
                {"name": "flaky", "kind": "mock", "script": [{"status": 503}]},
                {"name": "steady", "kind": "mock"},
            ],
            "routes": [
                {
                    "name": "r",
                    "models": ["m-*"],
                    "targets": [{"provider": "flaky"}, {"provider": "steady"}],
                }
            ],
        },
        clock=FakeClock(),
    )
    found = runtime.resolve("m-large", endpoint="chat")
    response = await found.route.complete(question("m-large"))
    assert response.routing is not None
    assert response.routing.answered == "steady"
    assert [a.outcome for a in response.routing.attempts] == ["failed", "answered"]
    await runtime.aclose()


async def test_aclose_closes_every_provider() -> None:
    """`aclose` closes each provider's pool (a mock's running handlers are cancelled)."""
    runtime = embedded_runtime({})
    response = await runtime.resolve("any", endpoint="chat").route.complete(question("any"))
    assert "any" in response.text
    await runtime.aclose()


def test_routes_of_one_config_share_one_source_of_randomness() -> None:
    """Every engine route built from a config draws on one generator, not one per route."""
    routes = [
        {"name": name, "models": [name], "targets": [{"provider": "openai", "model": "gpt-4o"}]}
        for name in ("one", "two")
    ]
    runtime = runtime_of({"providers": [OPENAI], "routes": routes})
    one, two = runtime.routes["one"], runtime.routes["two"]
    assert one.route.rng is two.route.rng
