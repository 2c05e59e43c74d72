"""What `scaling.py` generates and measures in-process: configurations with N routes or N
caller keys, how long each step of loading them takes, and resolution and key lookup alone.

Rule 1: route i serves the exact model `model-<i>` and the prefix pattern `family-<i>-*`; key i
is `sk-bench-<i>` (plain text in the file, hashed when loaded). Both are the same on every run,
so the load generator can pick a random i without a list.
Rule 2: every in-process timing is the median of repeated batches over models or keys picked
at random with a fixed seed.
"""

from __future__ import annotations

import random
import statistics
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import yaml

from turnout.access.keys import split_credentials
from turnout.config.load import parse_config
from turnout.gateway.runtime.live import Runtime

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

MODEL = "gpt-4o-mini"


def route_model(index: int, *, pattern: bool) -> str:
    """A model that route `index` serves: its exact name, or one its prefix pattern matches."""
    return f"family-{index}-x" if pattern else f"model-{index}"


def caller_key(index: int) -> str:
    """The plaintext of caller key `index`."""
    return f"sk-bench-{index}"


def config_text(
    upstream: str,
    *,
    routes: int = 1,
    keys: int = 0,
    providers: int = 1,
    stream_routes: int = 0,
) -> str:
    """A configuration: `providers` openai-kind providers at `upstream` (a base URL ending in
    /v1), `routes` routes as Rule 1 says (one target each, at the first provider, asking it
    for gpt-4o-mini), `stream_routes` routes `s<p>` that pass the requested model on to
    provider `p<p % providers>` (their patterns `s<p>` and `s<p>/*` carry mock fault specs),
    and with `keys` > 0 `server.auth: keys` and that many keys (else `auth: open`)."""
    auth = "keys" if keys else "open"
    lines = [
        "project: bench",
        f"server: {{auth: {auth}, max_connections: 12000, shutdown_grace_seconds: 0}}",
        "state: memory",
        "providers:",
    ]
    lines += [
        f"  - {{name: p{p}, kind: openai, api_key: sk-up, base_url: '{upstream}'}}"
        for p in range(providers)
    ]
    lines.append("routes:")
    lines.append(
        f"  - {{name: base, models: ['{MODEL}', '{MODEL}/*'], targets: [{{provider: p0}}]}}"
    )
    lines += [
        f"  - {{name: r{i}, models: [{route_model(i, pattern=False)}, 'family-{i}-*'],"
        f" targets: [{{provider: p0, model: {MODEL}}}]}}"
        for i in range(routes)
    ]
    lines += [
        f"  - {{name: s{s}, models: ['s{s}', 's{s}/*'], targets: [{{provider: p{s % providers}}}]}}"
        for s in range(stream_routes)
    ]
    if keys:
        lines.append("keys:")
        lines += [f"  - {{name: k{i}, key: {caller_key(i)}}}" for i in range(keys)]
    return "\n".join(lines) + "\n"


def write_config(path: Path, text: str) -> Path:
    """Write `text` to `path`; returns it."""
    path.write_text(text)
    return path


@dataclass
class LoadSteps:
    """Seconds each step of loading one configuration took in this process."""

    yaml: float
    validate: float
    build: float

    @property
    def total(self) -> float:
        """All three."""
        return self.yaml + self.validate + self.build


@dataclass
class Lookups:
    """Microseconds per call (medians of batches), and the load steps of the config."""

    count: int
    steps: LoadSteps
    resolve_cold_us: float | None = None  # distinct models, none seen before (cache misses)
    resolve_warm_us: float | None = None  # random models, repeats welcome (the cache's case)
    key_us: float | None = None  # KeyRing.lookup of a random known key
    authenticate_us: float | None = None  # headers -> Caller, as the gateway does per request


def load_steps(path: Path) -> tuple[LoadSteps, object]:
    """Load `path` as `turnout serve` does, timing YAML, validation and the runtime's build;
    returns the steps and the runtime."""
    started = time.perf_counter()
    data = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506
    parsed = time.perf_counter()
    config = parse_config(data)
    validated = time.perf_counter()
    runtime = Runtime.from_config(config)
    built = time.perf_counter()
    return LoadSteps(parsed - started, validated - parsed, built - validated), runtime


def _per_call_us(call: Callable[[object], object], items: list[object], batches: int = 5) -> float:
    """Median over `batches` of the microseconds per call over `items`."""
    results = []
    size = max(1, len(items) // batches)
    for start in range(0, size * batches, size):
        chunk = items[start : start + size]
        began = time.perf_counter()
        for item in chunk:
            call(item)
        results.append((time.perf_counter() - began) / len(chunk) * 1e6)
    return statistics.median(results)


def measure_routes(path: Path, count: int, lookups: int, seed: int = 7) -> Lookups:
    """Load a config of `count` routes; time resolving models cold and warm."""
    steps, runtime = load_steps(path)
    rng = random.Random(seed)
    resolve = runtime.resolve  # type: ignore[attr-defined]

    def one(model: object) -> object:
        return resolve(model, endpoint="chat")

    # Cold: each model once, none seen before (suffixes keep them distinct past `count`).
    cold: list[object] = [
        f"family-{rng.randrange(count)}-{n}" if n % 2 else route_model(n % count, pattern=False)
        for n in range(lookups)
    ]
    # Repeated models as traffic has them: random picks from every route.
    warm: list[object] = [
        route_model(rng.randrange(count), pattern=bool(rng.getrandbits(1))) for _ in range(lookups)
    ]
    result = Lookups(count, steps)
    result.resolve_cold_us = _per_call_us(one, cold)
    _per_call_us(one, warm)  # the first pass fills the cache
    result.resolve_warm_us = _per_call_us(one, warm)
    return result


def measure_keys(path: Path, count: int, lookups: int, seed: int = 7) -> Lookups:
    """Load a config of `count` keys; time `KeyRing.lookup` and header authentication."""
    steps, runtime = load_steps(path)
    ring = runtime.keys  # type: ignore[attr-defined]
    rng = random.Random(seed)
    picks: list[object] = [caller_key(rng.randrange(count)) for _ in range(lookups)]
    result = Lookups(count, steps)
    result.key_us = _per_call_us(ring.lookup, picks)
    headers: list[object] = [{"authorization": f"Bearer {key}"} for key in picks]
    result.authenticate_us = _per_call_us(
        lambda h: split_credentials(h, ring),  # type: ignore[arg-type]
        headers,
    )
    return result
