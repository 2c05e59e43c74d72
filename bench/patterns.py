"""Benchmark: model resolution over 10,000 mixed patterns (the goal: p99 under 1 ms).

Builds one conflict-free index of exact names and prefix, suffix and infix globs spread over
about a thousand routes, then times `resolve` on models never seen (cold: the lookup itself plus
the cache insert) and on models seen before (cached), and `closest` on models no pattern serves.
A sample of answers is checked against a scan of every pattern.

Run: python bench/patterns.py [--patterns 10000] [--lookups 20000] [--seed 7]
"""

from __future__ import annotations

import argparse
import random
import time
from typing import TYPE_CHECKING

from turnout.access.model_index import PatternIndex, RoutePatterns

if TYPE_CHECKING:
    from collections.abc import Callable

    from turnout.access.patterns import ModelPattern

VENDORS = ("acme", "northwind", "contoso", "globex", "initech", "umbrella", "hooli", "vandelay")
LINES = ("nova", "spark", "atlas", "orbit", "ember", "quill", "drift", "pulse", "forge", "lumen")
TAGS = ("mini", "nano", "max", "pro", "lite", "turbo", "instruct", "chat", "vision", "long")
LETTERS = "abcdefghijklmnopqrstuvwxyz0123456789-."


def _padded(literal: str, residue: int, filler: str) -> str:
    """Pad `literal` until its length is `residue` modulo 3.

    Prefix, suffix and infix literals get different residues: globs of equal literal count in
    different routes conflict unless both are prefixes (or both suffixes) with distinct literals.
    """
    while len(literal) % 3 != residue:
        literal += filler
    return literal


def make_routes(count: int, rng: random.Random) -> list[RoutePatterns]:
    """About `count` patterns: 40% exact, 35% prefix, 20% suffix, 5% infix, ten per route."""
    texts: list[str] = []
    infix_by_length: dict[int, list[str]] = {}
    for number in range(count):
        vendor, line, tag = rng.choice(VENDORS), rng.choice(LINES), rng.choice(TAGS)
        share = number % 20
        if share < 8:
            texts.append(f"{vendor}-{line}-{number}-{tag}")
        elif share < 15:
            texts.append(_padded(f"{vendor}-{line}-{number}", 0, "-") + "*")
        elif share < 19:
            texts.append("*" + _padded(f"-{tag}-{number}", 1, "x"))
        else:
            literal = _padded(f"{line}{number}", 2, "z")
            infix_by_length.setdefault(len(literal), []).append(f"*{literal}*")
    routes = [
        RoutePatterns.parse(f"route-{start // 10}", texts[start : start + 10])
        for start in range(0, len(texts), 10)
    ]
    routes += [
        RoutePatterns.parse(f"infix-{length}", group)
        for length, group in sorted(infix_by_length.items())
    ]
    return routes


def make_models(patterns: list[ModelPattern], count: int, rng: random.Random) -> list[str]:
    """Distinct models: most match some pattern, one in ten matches none."""
    models: set[str] = set()
    while len(models) < count:
        pattern = rng.choice(patterns)
        noise = "".join(rng.choices(LETTERS, k=rng.randint(1, 12)))
        if rng.random() < 0.1:
            models.add(f"unknown-{noise}")
        elif pattern.kind == "exact":
            models.add(pattern.literal)
        elif pattern.kind == "prefix":
            models.add(pattern.literal + noise)
        elif pattern.kind == "suffix":
            models.add(noise + pattern.literal)
        else:
            models.add(noise + pattern.literal + noise[::-1])
    return sorted(models)


def timings_us(call: Callable[[str], object], models: list[str]) -> list[float]:
    """Microseconds per call, one call per model."""
    spent = []
    for model in models:
        started = time.perf_counter_ns()
        call(model)
        spent.append((time.perf_counter_ns() - started) / 1000)
    return sorted(spent)


def report(label: str, spent: list[float]) -> None:
    """Print p50, p99 and max of sorted microsecond timings."""
    p50, p99 = spent[len(spent) // 2], spent[int(len(spent) * 0.99)]
    figures = f"p50={p50:8.2f} us  p99={p99:8.2f} us  max={spent[-1]:9.2f} us"
    print(f"{label:<28} n={len(spent):>6}  {figures}")


def check_sample(index: PatternIndex, routes: list[RoutePatterns], models: list[str]) -> int:
    """Compare `resolve` with a scan of every pattern; return the number of disagreements."""
    wrong = 0
    for model in models:
        matching = [
            (p.specificity, r.route) for r in routes for p in r.patterns if p.matches(model)
        ]
        top = max(matching)[0] if matching else None
        expected = tuple(sorted({name for spec, name in matching if spec == top}))
        match = index.resolve(model)
        wrong += (match.routes if match else ()) != expected
    return wrong


def main() -> None:
    """Build the index, time lookups, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patterns", type=int, default=10_000)
    parser.add_argument("--lookups", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=7)
    options = parser.parse_args()
    rng = random.Random(options.seed)

    routes = make_routes(options.patterns, rng)
    patterns = [pattern for entry in routes for pattern in entry.patterns]
    started = time.perf_counter()
    index = PatternIndex.build(routes, cache_size=options.lookups)
    built = time.perf_counter() - started
    kinds = {
        kind: sum(p.kind == kind for p in patterns)
        for kind in ("exact", "prefix", "suffix", "infix")
    }
    print(f"{len(patterns)} patterns in {len(routes)} routes {kinds}; build {built * 1000:.1f} ms")

    models = make_models(patterns, options.lookups, rng)
    report("resolve, cold (first time)", timings_us(index.resolve, models))
    rng.shuffle(models)
    report("resolve, cached", timings_us(index.resolve, models))
    unserved = [model for model in models if index.resolve(model) is None][:2000]
    report("closest (unserved models)", timings_us(index.closest, unserved))
    print(f"answers differing from a full scan: {check_sample(index, routes, models[:300])} of 300")


if __name__ == "__main__":
    main()
