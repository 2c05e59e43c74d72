"""What routing costs: `Route.complete` against calling the client directly.

Run: ``python bench/engine.py [--calls N] [--profile]``. In-process, on the real event-loop clock,
with a trivial client that answers at once, so everything measured is the engine's own work:

- the median per-call overhead of `Route.complete` over `client.complete`, on the happy path
  (3 targets, the first answers) and with the first target failing (503) and the second
  answering, measured in interleaved batches (``quietest`` is the overhead of the least
  disturbed batch, a guide on a busy machine);
- memory growth over 100,000 routed calls (tracemalloc, after a warm-up);
- with ``--profile``, the hot path's top functions (cProfile).

Nothing leaves the process.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import io
import pstats
import statistics
import time
import tracemalloc
from typing import TYPE_CHECKING

from turnout.errors import ProviderError
from turnout.routing.health import Health
from turnout.routing.route import Route, Target
from turnout.wire.model import ChatRequest, ChatResponse, Message, TextPart, Usage

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

    from turnout.wire.model import ChatChunk

REQUEST = ChatRequest([Message.user("Why is checkout failing?")], max_tokens=64)
TARGET_OVERHEAD_US = 20.0


class Answering:
    """A client that answers at once with a fresh response."""

    def __init__(self, provider: str, model: str) -> None:
        self.provider = provider
        self.model = model

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Answer."""
        return ChatResponse([TextPart("ok")], model=self.model, usage=Usage(10, 2))

    def stream(self, request: ChatRequest) -> AsyncIterator[ChatChunk]:
        """Not used here."""
        raise NotImplementedError


class Failing(Answering):
    """A client that always fails with a 503."""

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Fail."""
        raise ProviderError.for_class("provider_error", "overloaded", status=503)


def happy_route() -> Route:
    """Three targets; the first answers."""
    targets = [Target(name, Answering(name, f"{name}-m")) for name in ("a", "b", "c")]
    return Route("happy", targets, health=Health())


def failover_route() -> Route:
    """The first target fails (503), the second answers. The breaker is off, so the failing
    target is called on every request rather than skipped."""
    targets = [
        Target("a", Failing("a", "a-m")),
        Target("b", Answering("b", "b-m")),
        Target("c", Answering("c", "c-m")),
    ]
    return Route("failover", targets, health=Health(breaker=None))


async def batch_median_us(call: Callable[[], Awaitable[object]], calls: int) -> float:
    """Median microseconds per awaited call over one batch. The loop runs a cycle between
    calls, as it does around any real I/O (it is also when it drops cancelled timers)."""
    samples = []
    clock = time.perf_counter_ns
    for _ in range(calls):
        start = clock()
        await call()
        samples.append(clock() - start)
        await asyncio.sleep(0)
    return statistics.median(samples) / 1000


async def paired_us(
    direct: Callable[[], Awaitable[object]],
    routed: Callable[[], Awaitable[object]],
    calls: int,
    batches: int = 20,
) -> tuple[float, float, float]:
    """Direct and routed medians (µs) and the quietest batch's overhead, measured in
    interleaved batches so that a busy machine slows both sides alike."""
    for _ in range(2_000):
        await direct()
        await routed()
    direct_batches, routed_batches = [], []
    for _ in range(batches):
        direct_batches.append(await batch_median_us(direct, calls // batches))
        routed_batches.append(await batch_median_us(routed, calls // batches))
    quietest = min(r - d for d, r in zip(direct_batches, routed_batches, strict=True))
    return statistics.median(direct_batches), statistics.median(routed_batches), quietest


async def growth_kib(call: Callable[[], Awaitable[object]], calls: int) -> float:
    """KiB still allocated after `calls` more calls than after a warm-up (tracemalloc); the
    loop runs a cycle between calls, as around any real I/O."""
    for _ in range(1_000):
        await call()
        await asyncio.sleep(0)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(calls):
        await call()
        await asyncio.sleep(0)
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return (after - before) / 1024


async def measure(calls: int, memory_calls: int) -> list[tuple[str, float, float, float, float]]:
    """Rows: scenario, direct µs, routed µs, quietest-batch overhead µs, memory growth KiB."""
    rows = []
    direct = Answering("a", "a-m")
    scenarios = (
        ("happy path, 3 targets", happy_route()),
        ("first fails (503), second answers", failover_route()),
    )
    for name, route in scenarios:
        direct_us, routed_us, quietest = await paired_us(
            lambda: direct.complete(REQUEST),
            lambda route=route: route.complete(REQUEST),  # type: ignore[misc]
            calls,
        )
        grown = await growth_kib(lambda route=route: route.complete(REQUEST), memory_calls)  # type: ignore[misc]
        rows.append((name, direct_us, routed_us, quietest, grown))
    return rows


async def profile(calls: int) -> str:
    """The top of a cProfile of the happy path."""
    route = happy_route()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        await route.complete(REQUEST)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(18)
    return out.getvalue()


def main() -> None:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000, help="timed calls per scenario")
    parser.add_argument("--memory-calls", type=int, default=100_000, help="calls for growth")
    parser.add_argument("--profile", action="store_true", help="profile the happy path")
    args = parser.parse_args()
    rows = asyncio.run(measure(args.calls, args.memory_calls))
    print(
        f"{'scenario':<36}{'direct µs':>11}{'routed µs':>11}{'overhead µs':>13}"
        f"{'quietest µs':>13}{'growth KiB':>12}"
    )
    for name, direct_us, routed_us, quietest, grown in rows:
        print(
            f"{name:<36}{direct_us:>11.2f}{routed_us:>11.2f}{routed_us - direct_us:>13.2f}"
            f"{quietest:>13.2f}{grown:>12.1f}"
        )
    overhead = rows[0][2] - rows[0][1]
    verdict = "meets" if overhead <= TARGET_OVERHEAD_US else "misses"
    print(f"happy-path median overhead {verdict} the {TARGET_OVERHEAD_US:g} µs target")
    if args.profile:
        print(asyncio.run(profile(args.calls)))


if __name__ == "__main__":
    main()
