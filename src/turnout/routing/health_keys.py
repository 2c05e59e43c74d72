"""Health keys: which key a target's health is kept under (`key_by`), how a key reads, and the
snapshot of every key (`Health.snapshot`) for the admin API, logs and the routing record."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from turnout.errors import ConfigError
from turnout.routing.health_state import state_name

if TYPE_CHECKING:
    from collections.abc import Hashable, Iterator, Mapping

    from turnout.routing.health_state import Breaker, KeyState, KeyStateName

__all__ = ["HEALTH_KEY_BY", "HealthSnapshot", "KeyHealth", "check_key_by", "key_text", "target_key"]

HEALTH_KEY_BY = frozenset({"provider", "provider_model", "target"})

_STATE_TITLES = {
    "available": "Available",
    "cooling_down": "CoolingDown",
    "open": "Open",
    "half_open": "HalfOpen",
    "parked": "Parked",
}


def check_key_by(key_by: str) -> None:
    """Raise `ConfigError` unless `key_by` is one of `HEALTH_KEY_BY`."""
    if key_by not in HEALTH_KEY_BY:
        allowed = ", ".join(sorted(HEALTH_KEY_BY))
        raise ConfigError(
            f"health_key_by must be one of {allowed} (got {key_by!r})",
            [("health_key_by", f"must be one of {allowed}")],
        )


def target_key(
    key_by: str, *, provider: str, model: str | None, route: str, target: str
) -> Hashable:
    """A target's health key by `key_by`: `provider`, `(provider, model)` or `(route, target)`."""
    if key_by == "provider":
        return provider
    if key_by == "target":
        return (route, target)
    return (provider, model)


def key_text(key: Hashable) -> str:
    """How a health key reads: `provider`, `provider/model`, `route/target`."""
    if isinstance(key, tuple):
        return "/".join(str(part) for part in key if part is not None)
    return str(key)


@dataclass(frozen=True, slots=True)
class KeyHealth:
    """One key in a snapshot: `state`, `failures` in a row, and for a cooldown, open breaker or
    park, `until` (monotonic) and `seconds_left`."""

    key: Hashable
    text: str
    state: KeyStateName
    failures: int
    until: float | None
    seconds_left: float | None

    def __str__(self) -> str:
        return f"{self.text}={_STATE_TITLES[self.state]}({self.failures})"


@dataclass(frozen=True, slots=True)
class HealthSnapshot:
    """Every known key's health at `at` (monotonic), sorted by key text.

    `str()` reads like `local=Available(0), northwind=HalfOpen(2)`.
    """

    at: float
    keys: tuple[KeyHealth, ...] = ()

    @classmethod
    def of(
        cls, states: Mapping[Hashable, KeyState], breaker: Breaker, now: float
    ) -> HealthSnapshot:
        """Every key of `states` under `breaker` at `now`."""
        entries = []
        for key, state in list(states.items()):
            name, until = state_name(state, breaker, now)
            left = None if until is None else max(0.0, until - now)
            entries.append(KeyHealth(key, key_text(key), name, state.failures, until, left))
        entries.sort(key=lambda entry: (entry.text, repr(entry.key)))
        return cls(now, tuple(entries))

    def __str__(self) -> str:
        return ", ".join(str(entry) for entry in self.keys)

    def __iter__(self) -> Iterator[KeyHealth]:
        return iter(self.keys)

    def __len__(self) -> int:
        return len(self.keys)

    def get(self, key: Hashable) -> KeyHealth | None:
        """The entry for `key`, or None when the key is unknown."""
        return next((entry for entry in self.keys if entry.key == key), None)
