"""LiteLLM's settings sections -> route policy, breaker defaults, shared state, caller access.

Reads `router_settings` (first), `litellm_settings`, `general_settings`, `environment_variables`
and any other top-level key; every key it does not carry becomes a note with its path.
- `allowed_fails` N ("cool a deployment down after more than N failures in a minute") ->
  `failure_threshold` N+1 within `failure_window_seconds` 60; `cooldown_time` ->
  `cooldown_seconds`; `disable_cooldowns` (or a cooldown of 0) turns the breaker off.
- Redis (`redis_url`, or `redis_host`/`redis_port`/`redis_password`, or a Redis response cache)
  -> `state: redis://…`; a literal password becomes a `${TURNOUT_IMPORTED_KEY_n}` reference.
- `general_settings.master_key` -> the caller key `master-key` under `server.auth: keys`, so
  callers keep the key they send; without one LiteLLM accepts every caller, and so does
  `server.auth: open`. Either way the server listens on turnout's default address.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from turnout.config.litellm._links import FallbackEdge, read_fallbacks
from turnout.config.litellm._routes import RoutePolicy
from turnout.config.litellm._values import env_reference, number, reference_of, text_of

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.config.litellm._notes import Notes
    from turnout.config.litellm._values import Secrets

__all__ = ["MASTER_KEY_NAME", "Settings", "read_settings", "server_sections"]

MASTER_KEY_NAME = "master-key"
_HOST, _PORT = "127.0.0.1", 4000  # turnout's defaults; LiteLLM's port is 4000 too

_SECTIONS = ("model_list", "router_settings", "litellm_settings", "general_settings")
_STRATEGIES = frozenset(
    {
        "simple-shuffle", "least-busy", "latency-based-routing", "cost-based-routing",
        "usage-based-routing", "usage-based-routing-v2",
    }
)  # fmt: skip
_FALLBACK_KEYS = frozenset(
    {"fallbacks", "context_window_fallbacks", "content_policy_fallbacks", "default_fallbacks"}
)
_ROUTER_READ = _FALLBACK_KEYS | {
    "routing_strategy", "num_retries", "timeout", "stream_timeout", "allowed_fails",
    "cooldown_time", "disable_cooldowns", "model_group_alias", "redis_url", "redis_host",
    "redis_port", "redis_password", "cache_responses",
}  # fmt: skip
_LITELLM_READ = _FALLBACK_KEYS | {
    "num_retries", "request_timeout", "allowed_fails", "cooldown_time", "cache", "cache_params",
}  # fmt: skip
_CALLBACKS = (
    "LiteLLM's logging callbacks have no turnout equivalent; audit log and metrics are planned"
)
_REASONS = {
    "enable_pre_call_checks": (
        "turnout checks a target's context window only where one is declared, from "
        "model_info.max_input_tokens"
    ),
    "routing_strategy_args": "turnout's strategies take their own options",
    "retry_policy": "turnout retries by error class: see a route's retry_on",
    "allowed_fails_policy": "turnout's breaker counts every retryable failure alike",
    "retry_after": "turnout backs off from 250 ms and honours Retry-After",
    "max_fallbacks": "turnout allows at most 3 fallback routes and 3 hops per request",
    "routing_groups": "each turnout route has its own strategy",
    "drop_params": (
        "turnout passes a request on unchanged to a target of the caller's format and drops "
        "what another format cannot carry"
    ),
    "callbacks": _CALLBACKS,
    "success_callback": _CALLBACKS,
    "failure_callback": _CALLBACKS,
    "service_callback": _CALLBACKS,
    "set_verbose": "turnout has no setting for its log level or format yet",
    "json_logs": "turnout has no setting for its log level or format yet",
    "database_url": (
        "turnout keeps no database yet: its keys and routes are this file; LiteLLM's virtual "
        "keys and spend records are not carried"
    ),
    "max_budget": "turnout has no budgets",
    "provider_budget_config": "turnout has no budgets",
}
_CACHE_PARAMS_READ = frozenset({"ttl", "type", "host", "port", "password"})


@dataclass(slots=True)
class Settings:
    """Everything the settings sections carry."""

    policy: RoutePolicy = field(default_factory=RoutePolicy)
    breaker: dict[str, Any] = field(default_factory=dict)
    state: str | None = None
    master_key: str | None = None  # a ${VAR} reference, never a literal
    aliases: object = None
    aliases_path: str = "router_settings.model_group_alias"
    fallbacks: list[FallbackEdge] = field(default_factory=list)


def read_settings(doc: Mapping[str, Any], secrets: Secrets, notes: Notes) -> Settings:
    """Read every section but `model_list`; note what cannot be carried."""
    router = _section(doc, "router_settings", notes)
    litellm = _section(doc, "litellm_settings", notes)
    general = _section(doc, "general_settings", notes)
    settings = Settings(
        policy=_policy(router, litellm, notes),
        breaker=_breaker(router, litellm, notes),
        state=_state(router, litellm, secrets, notes),
        master_key=_master_key(general, secrets, notes),
        aliases=router.get("model_group_alias"),
        fallbacks=read_fallbacks(router, "router_settings", notes)
        + read_fallbacks(litellm, "litellm_settings", notes),
    )
    _note_rest(router, "router_settings", _ROUTER_READ, notes)
    _note_rest(litellm, "litellm_settings", _LITELLM_READ, notes)
    _note_rest(general, "general_settings", frozenset({"master_key"}), notes)
    _note_top_level(doc, notes)
    return settings


def server_sections(master_key: str | None) -> dict[str, Any]:
    """`server`, and with a master key `keys`: the master key is the one caller key, so every
    caller of the LiteLLM proxy keeps the key it sends."""
    auth = "open" if master_key is None else "keys"
    sections: dict[str, Any] = {"server": {"host": _HOST, "port": _PORT, "auth": auth}}
    if master_key is not None:
        sections["keys"] = [{"name": MASTER_KEY_NAME, "key": master_key}]
    return sections


def _master_key(general: Mapping[str, Any], secrets: Secrets, notes: Notes) -> str | None:
    path = "general_settings.master_key"
    reference = reference_of(general.get("master_key"), path, secrets, notes)
    if reference is None:
        notes.change(
            path,
            "not set, so LiteLLM accepts every caller: the server has auth: open and needs no "
            "key; if LiteLLM read its master key from LITELLM_MASTER_KEY, add a keys entry "
            "with key: ${LITELLM_MASTER_KEY} and set server.auth: keys",
        )
    else:
        notes.change(
            path,
            f"callers keep it: it is the caller key '{MASTER_KEY_NAME}' under server.auth: "
            "keys; LiteLLM's key-management endpoints map to turnout's admin API "
            "(`turnout keys create|list|revoke`), which needs admin_keys",
        )
    notes.change(
        "--host",
        f"LiteLLM listens on every interface unless started with --host; the server listens "
        f"on {_HOST}: set server.host to 0.0.0.0 to accept callers on other machines",
    )
    return reference


def _section(doc: Mapping[str, Any], name: str, notes: Notes) -> dict[str, Any]:
    value = doc.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        notes.drop(name, "not a mapping")
        return {}
    return value


def _pick(key: str, *sections: tuple[str, Mapping[str, Any]]) -> tuple[object, str]:
    """The first section's value for `key` and its path; (None, '') when none sets it."""
    for prefix, section in sections:
        if section.get(key) is not None:
            return section[key], f"{prefix}.{key}"
    return None, ""


def _policy(router: dict[str, Any], litellm: dict[str, Any], notes: Notes) -> RoutePolicy:
    both = (("router_settings", router), ("litellm_settings", litellm))
    strategy, strategy_path = _pick("routing_strategy", both[0])
    if strategy is None:
        strategy = "simple-shuffle"
    elif strategy not in _STRATEGIES:
        notes.drop(strategy_path, f"'{strategy}' has no turnout equivalent: routes fail over")
        strategy = "failover"
    elif str(strategy).startswith("usage-based"):
        notes.change(
            strategy_path,
            "turnout keeps no per-minute usage: routes start weighted by rpm/tpm where set",
        )
    retries, retries_path = _pick("num_retries", *both)
    count = number(retries)
    if retries is not None and (count is None or count < 0):
        notes.drop(retries_path, "not a whole number of retries")
    timeout, timeout_path = _pick("timeout", both[0])
    if timeout is None:
        timeout, timeout_path = _pick("request_timeout", both[1])
    stream_timeout, stream_path = _pick("stream_timeout", both[0])
    return RoutePolicy(
        strategy=str(strategy),
        strategy_path=strategy_path or "router_settings.routing_strategy",
        num_retries=int(count) if count is not None and count >= 0 else None,
        retries_path=retries_path,
        timeout=_seconds(timeout, timeout_path, notes),
        stream_timeout=_seconds(stream_timeout, stream_path, notes),
        cache=_cache(router, litellm, notes),
    )


def _seconds(value: object, path: str, notes: Notes) -> float | None:
    if value is None:
        return None
    seconds = number(value)
    if seconds is None or seconds <= 0:
        notes.drop(path, "not a number of seconds above 0")
        return None
    return seconds


def _breaker(router: dict[str, Any], litellm: dict[str, Any], notes: Notes) -> dict[str, Any]:
    both = (("router_settings", router), ("litellm_settings", litellm))
    if router.get("disable_cooldowns") is True:
        notes.change(
            "router_settings.disable_cooldowns",
            "the breaker is off; turnout still honours Retry-After cooldowns",
        )
        return {"enabled": False}
    breaker: dict[str, Any] = {}
    fails, fails_path = _pick("allowed_fails", *both)
    if fails is not None:
        count = number(fails)
        if count is None or count < 0:
            notes.drop(fails_path, "not a whole number of failures")
        else:
            breaker["failure_threshold"] = min(int(count) + 1, 1000)
            breaker["failure_window_seconds"] = 60
    cooldown, cooldown_path = _pick("cooldown_time", *both)
    seconds = number(cooldown)
    if cooldown is not None and (seconds is None or seconds < 0):
        notes.drop(cooldown_path, "not a number of seconds")
    elif seconds == 0:
        notes.change(cooldown_path, "a cooldown of 0 turns the breaker off")
        return {"enabled": False}
    elif seconds is not None:
        breaker["cooldown_seconds"] = int(seconds) if seconds.is_integer() else seconds
        breaker["cooldown_seconds"] = min(breaker["cooldown_seconds"], 86_400)
    return breaker


def _state(
    router: dict[str, Any], litellm: dict[str, Any], secrets: Secrets, notes: Notes
) -> str | None:
    """`redis://…` from the router's Redis, else from a Redis response cache."""
    url = router.get("redis_url")
    if url is not None:
        if env_reference(url) is None and "@" not in str(url):
            return text_of(url)
        return reference_of(url, "router_settings.redis_url", secrets, notes)
    if router.get("redis_host") is not None:
        return _redis(router, "router_settings.redis_", secrets, notes)
    params = litellm.get("cache_params")
    if isinstance(params, dict) and params.get("type") == "redis" and params.get("host"):
        return _redis(params, "litellm_settings.cache_params.", secrets, notes)
    return None


def _redis(section: Mapping[str, Any], prefix: str, secrets: Secrets, notes: Notes) -> str | None:
    key = "redis_" if prefix.endswith("redis_") else ""
    host = text_of(section.get(f"{key}host"))
    port = text_of(section.get(f"{key}port"))
    password = reference_of(section.get(f"{key}password"), f"{prefix}password", secrets, notes)
    if host is None:
        return None
    port = str(int(float(port))) if port and number(port) is not None else port
    auth = f":{password}@" if password else ""
    return f"redis://{auth}{host}{':' + port if port else ''}/0"


def _cache(router: dict[str, Any], litellm: dict[str, Any], notes: Notes) -> dict[str, Any] | None:
    params = litellm.get("cache_params")
    params = params if isinstance(params, dict) else {}
    if litellm.get("cache") is not True and router.get("cache_responses") is not True:
        if params:
            notes.drop("litellm_settings.cache_params", "the response cache is off")
        return None
    on = "litellm_settings.cache"
    path = on if litellm.get("cache") is True else "router_settings.cache_responses"
    notes.change(path, "every route caches chat answers in turnout's own response cache")
    for key in params:
        if key not in _CACHE_PARAMS_READ:
            notes.drop(f"litellm_settings.cache_params.{key}", "turnout's cache has no such option")
    if params.get("type") not in (None, "local", "redis"):
        notes.drop("litellm_settings.cache_params.type", "turnout caches in memory or Redis")
    ttl = number(params.get("ttl"))
    if ttl is None or ttl <= 0:
        return {"enabled": True}
    return {"enabled": True, "ttl_seconds": max(1, min(round(ttl), 86_400))}


def _note_rest(section: Mapping[str, Any], prefix: str, read: frozenset[str], notes: Notes) -> None:
    for key in section:
        if key not in read:
            notes.drop(f"{prefix}.{key}", _REASONS.get(str(key), "no turnout equivalent"))


def _note_top_level(doc: Mapping[str, Any], notes: Notes) -> None:
    for key, value in doc.items():
        if key == "environment_variables" and isinstance(value, dict) and value:
            names = ", ".join(str(name) for name in value)
            notes.drop(key, f"values are not copied: set {names} in the environment")
        elif key not in _SECTIONS and key != "environment_variables":
            notes.drop(str(key), "no turnout equivalent")
