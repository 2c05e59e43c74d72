"""A strategy's settings: the options each strategy type accepts, their ranges, and target
weights, checked as the configuration file writes them (snake_case or camelCase, each problem
named by its path, the nearest valid name suggested for a typo). Both the library's `Route(...)`
and the configuration loader build strategies through `strategy_from_config`.
"""

from __future__ import annotations

import difflib
import random
import re
from typing import TYPE_CHECKING, Any, NoReturn

from turnout.errors import ConfigError
from turnout.routing.strategies import (
    Failover,
    LeastBusy,
    LowestCost,
    LowestLatency,
    RoundRobin,
    Strategy,
    Weighted,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

__all__ = ["MAX_WEIGHT", "STRATEGY_TYPES", "strategy_from_config", "validate_weights"]

MAX_WEIGHT = 1_000_000

STRATEGY_TYPES: Mapping[str, frozenset[str]] = {
    "failover": frozenset(),
    "round-robin": frozenset(),
    "weighted": frozenset(),
    "lowest-cost": frozenset(),
    "lowest-latency": frozenset({"window_minutes", "min_requests", "exploration_share"}),
    "least-busy": frozenset({"window_minutes", "min_requests", "exploration_share"}),
}
"""Every strategy type and the options it accepts."""

_RANGES: dict[str, tuple[float, float, bool]] = {
    "window_minutes": (1, 1440, False),
    "min_requests": (1, 1_000_000, True),
    "exploration_share": (0, 0.5, False),
}


def strategy_from_config(
    spec: Mapping[str, Any] | str | None,
    *,
    rng: random.Random | None = None,
    session_pin_ttl: float = 86_400.0,
    path: str = "strategy",
) -> Strategy:
    """Build a strategy from its config: None (failover), a type name, or `{type: …, options
    flat beside type}`, each option in snake_case or camelCase (`windowMinutes`). Raises
    `ConfigError` naming `path.option` as written and the rule, suggesting the nearest valid
    name for a typo; `rng` defaults to a fresh `random.Random()`."""
    if spec is None:
        spec = {"type": "failover"}
    elif isinstance(spec, str):
        spec = {"type": spec}
    kind = spec.get("type")
    if not isinstance(kind, str) or kind not in STRATEGY_TYPES:
        hint = _nearest(kind, STRATEGY_TYPES) if isinstance(kind, str) else ""
        allowed = ", ".join(STRATEGY_TYPES)
        if kind is None:
            _fail([(f"{path}.type", f"is required: one of {allowed}")])
        _fail([(f"{path}.type", f"must be one of {allowed} (got {_shown(kind)}){hint}")])
    written = {name: value for name, value in spec.items() if name != "type"}
    problems = _option_problems(kind, written, path)
    if problems:
        _fail(problems)
    options = {_snake(name): value for name, value in written.items()}
    if kind == "weighted":
        return Weighted(rng if rng is not None else random.Random())
    if kind == "lowest-latency":
        return LowestLatency(**options, session_pin_ttl=session_pin_ttl)
    if kind == "least-busy":
        return LeastBusy(**options)
    if kind == "round-robin":
        return RoundRobin()
    if kind == "lowest-cost":
        return LowestCost()
    return Failover()


def _option_problems(kind: str, options: Mapping[str, Any], path: str) -> list[tuple[str, str]]:
    """Each option as written (snake_case or camelCase), checked against `kind`'s options."""
    allowed = STRATEGY_TYPES[kind]
    problems = []
    seen: dict[str, str] = {}
    for name, value in options.items():
        where = f"{path}.{name}"
        option = _snake(name)
        if option not in allowed:
            accepted = ", ".join(sorted(allowed)) or "none"
            hint = _nearest(option, allowed)
            problems.append((where, f"is not an option of {kind} (options: {accepted}){hint}"))
            continue
        if option in seen:
            rule = (
                f"gives {seen[option]!r} a second time (camelCase and snake_case name one option)"
            )
            problems.append((where, rule))
            continue
        seen[option] = str(name)
        low, high, whole = _RANGES[option]
        number_ok = isinstance(value, int | float) and not isinstance(value, bool)
        if whole and not isinstance(value, int):
            number_ok = False
        if not number_ok or not low <= value <= high:
            what = "a whole number" if whole else "a number"
            rule = f"must be {what} from {_shown(low)} to {_shown(high)} (got {_shown(value)})"
            problems.append((where, rule))
    return problems


def _snake(name: object) -> str:
    """An option's snake_case name: `windowMinutes` -> `window_minutes` (camelCase is
    accepted for every option, as it is for every key of the configuration file)."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", str(name)).lower()


def validate_weights(
    weights: Sequence[object],
    fallback_only: Sequence[bool],
    strategy_type: str,
    path: str = "targets",
) -> None:
    """Check target weights: each a whole number 0 to 1,000,000, and under `weighted` at least
    one non-fallback-only target with a positive weight. Raises `ConfigError` listing every
    problem (`path[i].weight`)."""
    problems = []
    for i, weight in enumerate(weights):
        if isinstance(weight, bool) or not isinstance(weight, int) or not 0 <= weight <= MAX_WEIGHT:
            rule = f"must be a whole number from 0 to {MAX_WEIGHT} (got {_shown(weight)})"
            problems.append((f"{path}[{i}].weight", rule))
    if not problems and strategy_type == "weighted":
        starters = [w for w, only in zip(weights, fallback_only, strict=True) if not only]
        if not any(isinstance(w, int) and w > 0 for w in starters):
            rule = "a weighted route needs a target that is not fallback_only with a weight above 0"
            problems.append((path, rule))
    if problems:
        _fail(problems)


def _shown(value: object) -> str:
    """A value as the configuration file writes it: `null`, `true`, `1000000`, `'fastest'`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return repr(value)


def _nearest(name: str, choices: Iterable[str]) -> str:
    found = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f"; did you mean {found[0]!r}?" if found else ""


def _fail(problems: list[tuple[str, str]]) -> NoReturn:
    where, rule = problems[0]
    raise ConfigError(f"{where} {rule}", problems)
