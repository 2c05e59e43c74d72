"""What `scaling.py` generates and measures in-process: configurations with N routes or N
caller keys, how long each step of loading them takes, and resolution and key lookup alone.

Rule 1: route i serves the exact model `model-<i>` and the prefix pattern `family-<i>-*`; key i
is `sk-bench-<i>` (plain text in the file, hashed when loaded). Both are the same on every run,
so the load generator can pick a random i without a list.
Rule 2: every in-process timing is CPU time of this process (which other work on the machine
hardly changes): loading, and the median of five batches over models or keys picked at random
with a fixed seed.
"""

from __future__ import annotations

import random
import statistics
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from turnout.access.keys import split_credentials
from turnout.config.load import load_config
from turnout.gateway.resolution.lookups import build_runtime
from turnout.gateway.resolution.resolve import Resolver

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from turnout.gateway.runtime.live import Runtime

MODEL = "gpt-4o-mini"
T = TypeVar("T")


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
    /v1) that may each hold 12,000 connections (an open stream holds one), `routes` routes as
    Rule 1 says (one target each, at the first provider, asking it for gpt-4o-mini),
    `stream_routes` routes `s<p>` that pass the requested model on to
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
        f"  - {{name: p{p}, kind: openai, api_key: sk-up, base_url: '{upstream}',"
        " max_connections: 12000}"
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
    """CPU seconds of loading one configuration in this process, as `turnout serve` does:
    `load_config` (read, YAML, validation) and `Runtime.from_config` (the build)."""

    load: float
    build: float

    @property
    def total(self) -> float:
        """Both."""
        return self.load + self.build


@dataclass
class Lookups:
    """Microseconds per call (medians of batches), and the load steps of the config."""

    count: int
    steps: LoadSteps
    resolve_cold_us: float | None = None  # random models, a resolver without its cache
    resolve_warm_us: float | None = None  # the same models, the runtime's resolver (cached)
    key_us: float | None = None  # KeyRing.lookup of a random known key
    authenticate_us: float | None = None  # headers -> Caller, as the gateway does per request


def load_steps(path: Path) -> tuple[LoadSteps, Runtime]:
    """Load `path` as `turnout serve` does, timing `load_config` and the runtime's build in
    CPU seconds of this process; returns the steps and the runtime."""
    started = time.process_time()
    config = load_config(path)
    loaded = time.process_time()
    runtime = build_runtime(config)
    built = time.process_time()
    return LoadSteps(loaded - started, built - loaded), runtime


def _per_call_us(call: Callable[[T], object], items: list[T], batches: int = 5) -> float:
    """Median over `batches` of the CPU microseconds per call over `items`."""
    results = []
    size = max(1, len(items) // batches)
    for start in range(0, size * batches, size):
        chunk = items[start : start + size]
        began = time.process_time()
        for item in chunk:
            call(item)
        results.append((time.process_time() - began) / len(chunk) * 1e6)
    return statistics.median(results)


def measure_routes(path: Path, count: int, lookups: int, seed: int = 7) -> Lookups:
    """Load a config of `count` routes; time resolving models cold and warm."""
    steps, runtime = load_steps(path)
    rng = random.Random(seed)
    uncached = Resolver(
        runtime.routes, runtime.index, project=runtime.project, access=runtime.access, cache_size=0
    )

    def cold(model: str) -> object:
        return uncached.resolve(model, endpoint="chat")

    def warm(model: str) -> object:
        return runtime.resolve(model, endpoint="chat")

    # Random picks from every route, half exact names and half pattern matches.
    models = [
        route_model(rng.randrange(count), pattern=bool(rng.getrandbits(1))) for _ in range(lookups)
    ]
    result = Lookups(count, steps)
    result.resolve_cold_us = _per_call_us(cold, models)
    _per_call_us(warm, models)  # the first pass fills the cache
    result.resolve_warm_us = _per_call_us(warm, models)
    return result


def measure_keys(path: Path, count: int, lookups: int, seed: int = 7) -> Lookups:
    """Load a config of `count` keys; time `KeyRing.lookup` and header authentication."""
    steps, runtime = load_steps(path)
    ring = runtime.keys
    assert ring is not None
    rng = random.Random(seed)
    picks = [caller_key(rng.randrange(count)) for _ in range(lookups)]
    result = Lookups(count, steps)
    result.key_us = _per_call_us(ring.lookup, picks)
    headers = [{"authorization": f"Bearer {key}"} for key in picks]
    result.authenticate_us = _per_call_us(lambda h: split_credentials(h, ring), headers)
    return result
