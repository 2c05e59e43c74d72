"""Rules that relate configuration objects to one another: the one validator.

`check_config(config)` returns every violation as `(path, message)`, with paths like
`routes[2].targets[0].max_retries`; the file loader calls it, and the admin API calls it on the
file and the store together, so a rule has one wording wherever it fires. Every message names
the field and the rule. `default_route` is a stored project's default route (the file has none).
`check_config_warnings(config)` returns what loads but deserves a word (a route capped below
its static attempt total, a provider that gets no implicit route, a target excluded from
`/v1/messages`), in the same form.

A configuration is immutable (frozen models, tuples), so `check_config` remembers each one it
accepted (by identity, for the `default_route` it was checked with, for as long as it lives)
and does not check it again: the file loader checks a configuration and the runtime built from
it then finds it accepted. A copy with changes (`model_copy`) is another object, checked anew.
"""

from __future__ import annotations

import difflib
import importlib.util
import weakref
from typing import TYPE_CHECKING, Any

from turnout.access.bindings import RouteModels, check_bindings, route_models
from turnout.access.consumers import (
    FILE_FIELDS,
    Assignment,
    check_assignment,
    disabled_route_message,
)
from turnout.access.keys import KeyRing
from turnout.access.policies import Policies
from turnout.access.served_routes import chat_split, find_served_routes, messages_split
from turnout.config._control_rules import check_store
from turnout.config._route_rules import (
    check_aliases,
    check_fallbacks,
    check_patterns,
    check_policy_options,
    check_reserved_names,
    static_budget_warnings,
)
from turnout.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from turnout.access.served_routes import ServedRoutes
    from turnout.schema import FileConfig, ProviderConfig

__all__ = ["check_config", "check_config_warnings", "mock_script_steps"]

Problems = list[tuple[str, str]]

_ACCEPTED: weakref.WeakValueDictionary[tuple[int, str | None], FileConfig] = (
    weakref.WeakValueDictionary()
)
"""The configurations `check_config` accepted, by `(id, default_route)`; an entry goes when its
configuration does, so an id reused by a later object never matches it."""


def check_config(config: FileConfig, *, default_route: str | None = None) -> Problems:
    """Every cross-object violation in `config`, grouped by rule, in file order within each.
    `default_route`: the route consumers without an assignment inherit (None: none). A
    configuration already accepted with this `default_route` is not checked again."""
    key = (id(config), default_route)
    if _ACCEPTED.get(key) is config:
        return []
    errors = _violations(config, default_route)
    if not errors:
        _ACCEPTED[key] = config
    return errors


def _violations(config: FileConfig, default_route: str | None) -> Problems:
    served_routes = find_served_routes(config)
    errors: Problems = []
    errors.extend(_check_not_supported(config))
    errors.extend(_check_state(config))
    errors.extend(check_store(config))
    errors.extend(_check_names(config))
    errors.extend(check_reserved_names(config))
    errors.extend(_check_providers(config))
    errors.extend(_check_targets(config))
    errors.extend(check_policy_options(config))
    errors.extend(check_fallbacks(config))
    errors.extend(check_aliases(config))
    errors.extend(check_patterns(config))
    errors.extend(_check_keys(config, served_routes))
    errors.extend(_check_access(config, served_routes))
    errors.extend(_check_consumers(config, default_route))
    return errors


def check_config_warnings(config: FileConfig) -> Problems:
    """What loads but deserves a word, as `(path, message)`."""
    found: Problems = []
    found.extend(static_budget_warnings(config))
    found.extend(find_served_routes(config).warnings)
    found.extend(_endpoint_warnings(config))
    return found


_NOT_SUPPORTED: Mapping[str, str] = {}
"""Keys the schema knows but nothing reads yet, and why each is refused."""


def _check_not_supported(config: FileConfig) -> Problems:
    """A key that nothing reads is refused rather than silently ignored, so that no file
    relies on it before it works."""
    return [
        (key, f"is not supported yet: {why}; remove it")
        for key, why in _NOT_SUPPORTED.items()
        if key in config.model_fields_set
    ]


def _check_state(config: FileConfig) -> Problems:
    """`state` is `memory` or a Redis URL (state shared by replicas); only the scheme is
    repeated, since a URL may hold a password."""
    state = config.state
    if state == "memory" or state.startswith(("redis://", "rediss://")):
        return []
    scheme = state.split(":", 1)[0] if ":" in state else state
    return [
        (
            "state",
            f"unknown state store {scheme!r}: use 'memory' or a 'redis://' / 'rediss://' URL",
        )
    ]


def _check_names(config: FileConfig) -> Problems:
    """Routes and providers share one name space per project (409 NAME_TAKEN on the API);
    names are compared ignoring case, as models are."""
    errors: Problems = []
    seen: dict[str, str] = {}
    named = [("providers", i, p.name) for i, p in enumerate(config.providers)]
    named += [("routes", i, r.name) for i, r in enumerate(config.routes)]
    for kind, i, name in named:
        lowered = name.lower()
        if lowered in seen:
            errors.append(
                (f"{kind}[{i}].name", f"name '{name}' is already taken by {seen[lowered]}")
            )
        else:
            seen[lowered] = f"{kind}[{i}]"
    return errors


def _check_targets(config: FileConfig) -> Problems:
    """Each target names a provider of the project; target names are unique within a route."""
    errors: Problems = []
    providers = {p.name for p in config.providers}
    for r, route in enumerate(config.routes):
        names: set[str] = set()
        for t, target in enumerate(route.targets):
            path = f"routes[{r}].targets[{t}]"
            if target.provider not in providers:
                rule = f"no provider named '{target.provider}' in the project"
                errors.append(
                    (f"{path}.provider", rule + _did_you_mean(target.provider, providers))
                )
            if target.display_name in names:
                errors.append(
                    (f"{path}.name", f"two targets of the route are named '{target.display_name}'")
                )
            names.add(target.display_name)
    return errors


def _did_you_mean(name: str, names: Iterable[str]) -> str:
    """`; did you mean 'x'?` naming the closest of `names` (case aside), or nothing."""
    by_lower = {known.lower(): known for known in sorted(names)}
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.6)
    return f"; did you mean '{by_lower[close[0]]}'?" if close else ""


# ---- providers ----------------------------------------------------------------------------

_OWN_OPTIONS: Mapping[str, tuple[str, ...]] = {
    "openai-compatible": ("preset",),
    "azure-openai": ("wire", "api_version"),
    "mock": ("wire", "script"),
    "vertex": ("project", "location", "credentials_file", "credentials_json", "publisher"),
    "bedrock": ("region", "access_key_id", "secret_access_key", "session_token", "profile", "api"),
}
"""The options only some kinds take, by kind."""
_KIND_OPTIONS: Mapping[str, frozenset[str]] = {
    option: frozenset(kind for kind, options in _OWN_OPTIONS.items() if option in options)
    for options in _OWN_OPTIONS.values()
    for option in options
}
"""Each such option and the kinds that take it."""


def _check_providers(config: FileConfig) -> Problems:
    """Per-kind options (each only on the kinds that take it), prices and catalog overrides
    by model name, mock scripts."""
    errors: Problems = []
    for p, provider in enumerate(config.providers):
        errors.extend(_provider_problems(f"providers[{p}]", provider))
    return errors


def _provider_problems(base: str, provider: ProviderConfig) -> Problems:
    errors: Problems = []
    kind = provider.kind
    if kind == "azure-openai":
        if provider.wire is None:
            errors.append(
                (
                    f"{base}.wire",
                    "an azure-openai provider needs wire: openai-chat or anthropic-messages",
                )
            )
        if not provider.base_url:
            errors.append(
                (f"{base}.base_url", "an azure-openai provider needs base_url (its endpoint)")
            )
    if kind == "vertex":
        errors.extend(vertex_problems(base, provider))
    if kind == "bedrock":
        errors.extend(_bedrock_problems(base, provider))
    if kind == "openai-compatible" and not provider.base_url and provider.preset is None:
        errors.append(
            (f"{base}.base_url", "an openai-compatible provider needs base_url or preset")
        )
    for option, kinds in _KIND_OPTIONS.items():
        if kind not in kinds and getattr(provider, option):
            allowed = " and ".join(sorted(kinds))
            errors.append((f"{base}.{option}", f"is only for {allowed} providers"))
    errors.extend(_model_name_problems(base, provider))
    if provider.script:
        errors.extend(_script_problems(base, provider.script))
    return errors


def _model_name_problems(base: str, provider: ProviderConfig) -> Problems:
    """Prices and catalog overrides are each for one model name."""
    return [
        (f"{base}.{option}.{model}", f"{what} is for one model name, without '*' or spaces")
        for option, what, models in (
            ("prices", "a price", provider.prices),
            ("catalog", "a catalog override", provider.catalog),
        )
        for model in models
        if not model or "*" in model or any(char.isspace() for char in model)
    ]


def vertex_problems(base: str, provider: ProviderConfig) -> Problems:
    """A `vertex` provider: a project, one credentials source at most, no `api_key`, and the
    `gcp` extra installed (looked up, not imported)."""
    # Imported here: the check is only for configurations that have a vertex provider.
    from turnout.providers._google_auth import GCP_EXTRA, google_auth_installed  # noqa: PLC0415

    errors: Problems = []
    if not provider.project:
        errors.append((f"{base}.project", "a vertex provider needs project (a Google Cloud id)"))
    if provider.credentials_file and provider.credentials_json:
        rule = "give credentials_file or credentials_json, not both"
        errors.append((f"{base}.credentials_json", rule))
    if provider.api_key:
        rule = "a vertex provider authenticates with Google Cloud credentials, not api_key"
        errors.append((f"{base}.api_key", rule))
    if not google_auth_installed():
        rule = f"a vertex provider needs the google-auth library: {GCP_EXTRA}"
        errors.append((f"{base}.kind", rule))
    return errors


def _bedrock_problems(base: str, provider: ProviderConfig) -> Problems:
    """A bedrock provider needs the aws extra installed, its two keys together, and signs
    with its own credentials (never a caller's)."""
    errors: Problems = []
    if importlib.util.find_spec("botocore") is None:
        rule = "a bedrock provider needs the aws extra (botocore): pip install 'turnout[aws]'"
        errors.append((f"{base}.kind", rule))
    if bool(provider.access_key_id) != bool(provider.secret_access_key):
        rule = "access_key_id and secret_access_key are given together or not at all"
        errors.append((f"{base}.access_key_id", rule))
    if provider.credential_mode == "passthrough":
        rule = "a bedrock provider signs with AWS credentials: org_key only"
        errors.append((f"{base}.credential_mode", rule))
    return errors


def _script_problems(base: str, script: Sequence[Mapping[str, Any]]) -> Problems:
    """A mock provider's script steps, checked against the mock upstream's fault grammar."""
    # Imported here: loading the mock upstream with this module would load it into every gateway.
    from turnout.mock_upstream.faults import parse_fault  # noqa: PLC0415

    errors: Problems = []
    for i, item in enumerate(script):
        try:
            parse_fault(_step(item))
        except ValueError as exc:
            errors.append((f"{base}.script[{i}]", str(exc)))
    return errors


def _step(item: Mapping[str, Any]) -> str:
    """`{status: 503, retry_after: 8}` -> `status=503;retry_after=8`; `{}` or `{ok: true}` -> ok."""
    parts = []
    for key, value in item.items():
        if value is True:
            parts.append(str(key))
        elif value is not False and value is not None:
            parts.append(f"{key}={value}")
    return ";".join(parts) or "ok"


def mock_script_steps(provider: ProviderConfig) -> list[str]:
    """A `mock` provider's `script` as the mock upstream's fault steps."""
    return [_step(item) for item in provider.script]


# ---- keys and access ------------------------------------------------------------------------


def _check_keys(config: FileConfig, served_routes: ServedRoutes) -> Problems:
    """Key `routes` name routes the project serves; the key ring's own rules."""
    errors: Problems = []
    disabled = {route.name for route in config.routes if not route.enabled}
    for k, key in enumerate(config.keys):
        for i, name in enumerate(key.routes):
            if name in disabled:
                errors.append((f"keys[{k}].routes[{i}]", f'route "{name}" is disabled'))
            elif name not in served_routes.routes:
                errors.append((f"keys[{k}].routes[{i}]", f'no route named "{name}" is served'))
    try:
        KeyRing.from_config(config.keys, config.project)
    except ConfigError as exc:
        errors.extend(exc.errors)
    return errors


def _check_access(config: FileConfig, served_routes: ServedRoutes) -> Problems:
    """Bindings (a grant's route exists and serves its models) and policies."""
    configured = {
        name: served_route.config
        for name, served_route in served_routes.routes.items()
        if served_route.config is not None
    }
    served = route_models(configured)
    for name, served_route in served_routes.routes.items():
        served.setdefault(name, RouteModels(name, served_route.patterns))
    errors: Problems = [(p.path, p.message) for p in check_bindings(config.bindings, served)]
    try:
        Policies.from_config(config.policies)
    except ConfigError as exc:
        errors.extend(exc.errors)
    return errors


def _check_consumers(config: FileConfig, default_route: str | None) -> Problems:
    """Consumer names are unique; each one's route, provider and agent exist (the route
    enabled), and its assignment keeps the consumer rules (`turnout.access.consumers`)."""
    routes = {route.name: route for route in config.routes}
    providers = {provider.name for provider in config.providers}
    by_name = {consumer.name: consumer for consumer in reversed(config.consumers)}
    errors: Problems = []
    seen: dict[str, str] = {}
    for c, consumer in enumerate(config.consumers):
        base = f"consumers[{c}]"
        if consumer.name.lower() in seen:
            taken = seen[consumer.name.lower()]
            errors.append((f"{base}.name", f"name '{consumer.name}' is already taken by {taken}"))
        seen.setdefault(consumer.name.lower(), base)
        route = routes.get(consumer.model_route or "")
        if consumer.model_route is not None and route is None:
            rule = f"no route named '{consumer.model_route}' in the project"
            errors.append(
                (f"{base}.model_route", rule + _did_you_mean(consumer.model_route, routes))
            )
        elif route is not None and not route.enabled:
            errors.append((f"{base}.model_route", disabled_route_message(route.name)))
        if consumer.provider is not None and consumer.provider not in providers:
            rule = f"no provider named '{consumer.provider}' in the project"
            errors.append((f"{base}.provider", rule + _did_you_mean(consumer.provider, providers)))
        agent = by_name.get(consumer.agent or "")
        if consumer.agent is not None and agent is None:
            rule = f"no consumer named '{consumer.agent}' in the project"
            errors.append((f"{base}.agent", rule + _did_you_mean(consumer.agent, by_name)))
        problems = check_assignment(
            Assignment.from_config(consumer),
            agent=None if agent is None else Assignment.from_config(agent),
            default_route=default_route,
            fields=FILE_FIELDS,
        )
        errors.extend((f"{base}.{field}", message) for field, message in problems)
    return errors


# ---- warnings ---------------------------------------------------------------------------------


def _endpoint_warnings(config: FileConfig) -> Problems:
    """Targets left out of `/v1/messages` on a route that serves it, or out of
    `/v1/chat/completions` on a cross-provider route. A target that does not speak Anthropic
    Messages serves `/v1/messages` only on a cross-provider route; there, a target of another
    format or family also needs its own credential and a model mapping."""
    providers = {p.name: p for p in config.providers}
    found: Problems = []
    for r, route in enumerate(config.routes):
        if not route.enabled:
            continue
        kept, excluded = messages_split(route, providers)
        if not kept and not route.allow_cross_provider:
            continue  # the route does not serve /v1/messages at all; nothing is left out
        for t, reason in excluded:
            name = route.targets[t].display_name
            message = f'target "{name}" of route "{route.name}" does not serve /v1/messages: '
            found.append((f"routes[{r}].targets[{t}]", message + reason))
        for t, reason in chat_split(route, providers)[1]:
            name = route.targets[t].display_name
            message = (
                f'target "{name}" of route "{route.name}" does not serve /v1/chat/completions: '
            )
            found.append((f"routes[{r}].targets[{t}]", message + reason))
    return found
