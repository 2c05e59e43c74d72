"""Start-target strategies, try order and strategy validation."""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from typing import TYPE_CHECKING

import pytest

from turnout.errors import ConfigError
from turnout.routing.latency import LatencyWindow, percentile
from turnout.routing.strategies import (
    Failover,
    LeastBusy,
    LowestCost,
    LowestLatency,
    RoundRobin,
    Strategy,
    TargetView,
    Weighted,
    session_hash,
    try_order,
)
from turnout.routing.strategy_settings import strategy_from_config, validate_weights

if TYPE_CHECKING:
    from collections.abc import Mapping


def targets(*weights: int, prices: tuple[float | None, ...] = ()) -> list[TargetView]:
    """Candidates t0, t1, … with the given weights (and prices)."""
    return [
        TargetView(i, f"t{i}", w, prices[i] if i < len(prices) else None, f"k{i}")
        for i, w in enumerate(weights)
    ]


def pick(
    strategy: Strategy,
    candidates: list[TargetView],
    *,
    session: str | None = None,
    now: float = 0.0,
    route: str = "r1",
) -> tuple[int, str]:
    return strategy.pick_start(candidates, route_id=route, session_id=session, now=now)


def feed(strategy: Strategy, key: str, seconds: float, count: int, now: float = 0.0) -> None:
    for _ in range(count):
        strategy.record_latency(key, seconds, now)


# ---- try order -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "start", "expected"),
    [
        ([False, False, False], 0, [0, 1, 2]),
        ([False, False, False, False], 2, [2, 0, 1, 3]),
        ([False, True, False, True], 2, [2, 0, 1, 3]),
        ([False, True, False, False], 0, [0, 2, 3, 1]),
        ([True, False, True], 2, [2, 1, 0]),
        ([True, True], 1, [1, 0]),
    ],
)
def test_try_order(flags: list[bool], start: int, expected: list[int]) -> None:
    """Start, then non-fallback-only targets from the top (not rotated), then fallback-only."""
    assert try_order(len(flags), flags, start) == expected


def test_try_order_rejects_a_start_outside_the_list() -> None:
    """A start index outside the targets is a programming error."""
    with pytest.raises(ValueError, match="do not fit"):
        try_order(2, [False, False], 2)


# ---- simple strategies ---------------------------------------------------------------------


def test_failover_starts_on_the_first_target() -> None:
    """failover always starts on the first candidate."""
    assert pick(Failover(), targets(1, 5, 9)) == (0, "failover: first target")


def test_empty_candidates_are_refused() -> None:
    """Every strategy refuses an empty candidate list."""
    with pytest.raises(ValueError, match="at least one"):
        pick(RoundRobin(), [])


def test_round_robin_turns_per_route() -> None:
    """round-robin starts on the next target in turn, counting per route."""
    strategy = RoundRobin()
    cands = targets(1, 1, 1)
    assert [pick(strategy, cands)[0] for _ in range(4)] == [0, 1, 2, 0]
    assert pick(strategy, cands, route="r2") == (0, "round-robin: turn 1")
    assert pick(strategy, cands)[1] == "round-robin: turn 5"


def test_session_hash_is_sha256_not_hash() -> None:
    """The session hash is sha256(route_id:session_id) read big-endian."""
    digest = hashlib.sha256(b"r1:abc").digest()
    assert session_hash("r1", "abc") == int.from_bytes(digest, "big")


def test_round_robin_session_start_agrees_across_replicas() -> None:
    """Two instances (two replicas) give a session the same start, from the hash."""
    cands = targets(1, 1, 1, 1, 1)
    first, second = RoundRobin(), RoundRobin()
    pick(second, cands)  # the other replica's turn counter has moved on
    for session in ("s-1", "s-2", "s-3", "alpha"):
        expected = session_hash("r1", session) % 5
        assert pick(first, cands, session=session) == (expected, "round-robin: session hash")
        assert pick(second, cands, session=session)[0] == expected


def test_weighted_draw_follows_weights_and_skips_zero() -> None:
    """weighted starts in proportion to weight; weight 0 never starts."""
    strategy = Weighted(random.Random(7))
    cands = targets(1, 0, 3)
    counts = Counter(pick(strategy, cands)[0] for _ in range(4000))
    assert counts[1] == 0
    assert 0.22 < counts[0] / 4000 < 0.28
    assert 0.72 < counts[2] / 4000 < 0.78
    assert pick(strategy, cands)[1].startswith("weighted: random (weight ")


def test_weighted_session_maps_hash_onto_cumulative_weights() -> None:
    """With a session, the hash mod the total weight picks along cumulative weights."""
    cands = targets(2, 0, 5)
    for session in ("a", "b", "c", "d", "e", "f"):
        point = session_hash("r1", session) % 7
        expected = 0 if point < 2 else 2
        one = pick(Weighted(random.Random(1)), cands, session=session)
        two = pick(Weighted(random.Random(2)), cands, session=session)
        assert one[0] == two[0] == expected
        assert one[1] == f"weighted: session hash (weight {cands[expected].weight} of 7)"


def test_weighted_without_positive_weight_starts_first() -> None:
    """If no candidate has a positive weight, weighted falls back to the first."""
    assert pick(Weighted(random.Random(0)), targets(0, 0)) == (
        0,
        "weighted: no positive weight, first target",
    )


def test_lowest_cost_prefers_cheap_then_weight_then_order() -> None:
    """lowest-cost: cheapest first; unknown price last; ties by higher weight, then order."""
    strategy = LowestCost()
    assert pick(strategy, targets(1, 1, 1, prices=(None, 3.0, 0.75))) == (
        2,
        "lowest-cost: 0.75 USD per 1M tokens",
    )
    assert pick(strategy, targets(1, 4, 4, prices=(2.0, 2.0, 2.0)))[0] == 1
    assert pick(strategy, targets(1, 3, prices=(None, None))) == (
        1,
        "lowest-cost: no target has a known price",
    )


# ---- lowest-latency ------------------------------------------------------------------------


def test_lowest_latency_picks_lowest_p95() -> None:
    """lowest-latency starts on the measured target with the lowest P95."""
    strategy = LowestLatency(min_requests=3, exploration_share=0)
    cands = targets(1, 1)
    feed(strategy, "k0", 0.9, 3)
    feed(strategy, "k1", 0.41, 3)
    assert pick(strategy, cands) == (1, "lowest-latency: p95 0.41 s")


def test_lowest_latency_under_sampled_rank_after_measured() -> None:
    """A faster target with fewer than min_requests samples ranks after a measured one."""
    strategy = LowestLatency(min_requests=5, exploration_share=0)
    feed(strategy, "k0", 0.1, 4)
    feed(strategy, "k1", 2.0, 5)
    assert pick(strategy, targets(1, 1))[0] == 1


def test_lowest_latency_ties_go_to_weight_then_order() -> None:
    """Equal P95s: the higher weight wins, then the earlier target."""
    strategy = LowestLatency(min_requests=1, exploration_share=0)
    for key in ("k0", "k1", "k2"):
        feed(strategy, key, 0.5, 1)
    assert pick(strategy, targets(1, 2, 2))[0] == 1


def test_lowest_latency_without_measurements_uses_weight_then_order() -> None:
    """With nothing measured, the start is the highest weight, then the first in the list."""
    strategy = LowestLatency(exploration_share=0)
    assert pick(strategy, targets(1, 3, 3)) == (
        1,
        "lowest-latency: no target measured yet (fewer than 20 samples)",
    )


def test_exploration_share_cadence_in_turn() -> None:
    """exploration_share 0.25: every fourth request starts on an under-sampled target, in turn."""
    strategy = LowestLatency(min_requests=20, exploration_share=0.25)
    feed(strategy, "k0", 0.2, 20)
    cands = targets(1, 1, 1)
    starts = [pick(strategy, cands)[0] for _ in range(12)]
    assert starts == [0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 1]
    feed(strategy, "k2", 0.3, 12)
    reasons = [pick(strategy, cands)[1] for _ in range(4)]
    assert reasons[-1] == "lowest-latency: exploring (12 samples < 20)"


@pytest.mark.parametrize(("share", "every"), [(0.05, 20), (0.1, 10), (0.5, 2)])
def test_exploration_share_is_exact(share: float, every: int) -> None:
    """A share of 1/n explores exactly every n-th request (no float drift)."""
    strategy = LowestLatency(exploration_share=share)
    feed(strategy, "k0", 0.2, 20)
    starts = [pick(strategy, targets(1, 1))[0] for _ in range(every * 3)]
    explored = [i for i, start in enumerate(starts) if start == 1]
    assert explored == [every - 1, 2 * every - 1, 3 * every - 1]


def test_exploration_off_at_zero_share() -> None:
    """exploration_share 0 never starts on an under-sampled target."""
    strategy = LowestLatency(min_requests=20, exploration_share=0)
    feed(strategy, "k0", 0.2, 20)
    assert {pick(strategy, targets(1, 1))[0] for _ in range(100)} == {0}


def test_latency_window_expires_old_samples() -> None:
    """Samples older than window_minutes leave the P95 and the sample count."""
    strategy = LowestLatency(window_minutes=1, min_requests=2, exploration_share=0)
    feed(strategy, "k0", 0.1, 2, now=0.0)
    feed(strategy, "k1", 0.5, 2, now=30.0)
    cands = targets(1, 1)
    assert pick(strategy, cands, now=59.0)[0] == 0
    assert pick(strategy, cands, now=60.0)[0] == 1  # exactly 60 s old: expired


def test_lowest_latency_remembers_a_session_start() -> None:
    """A session keeps its start for session_pin_ttl after its last request, in this process."""
    strategy = LowestLatency(min_requests=1, exploration_share=0, session_pin_ttl=100)
    feed(strategy, "k0", 0.2, 1)
    feed(strategy, "k1", 0.5, 1)
    cands = targets(1, 1)
    assert pick(strategy, cands, session="s", now=0)[0] == 0
    feed(strategy, "k1", 0.01, 50, now=1)
    assert pick(strategy, cands, session="s", now=90) == (0, "lowest-latency: session pinned")
    assert pick(strategy, cands, session="s", now=189)[0] == 0  # refreshed at 90
    assert pick(strategy, cands, session="s", now=289)[0] == 1  # expired at 289
    assert pick(strategy, cands, session="other", now=290)[0] == 1


def test_lowest_latency_repins_when_the_pinned_target_is_gone() -> None:
    """A session whose pinned target is no longer a candidate picks afresh."""
    strategy = LowestLatency(min_requests=1, exploration_share=0)
    feed(strategy, "k0", 0.2, 1)
    feed(strategy, "k1", 0.5, 1)
    assert pick(strategy, targets(1, 1), session="s")[0] == 0
    assert pick(strategy, targets(1, 1)[1:], session="s")[0] == 1
    assert pick(strategy, targets(1, 1), session="s")[0] == 1


def test_lowest_latency_forgets_expired_session_pins() -> None:
    """Expired session pins are swept, so the pin memory stays bounded."""
    strategy = LowestLatency(exploration_share=0, session_pin_ttl=10)
    cands = targets(1, 1)
    for i in range(1023):
        pick(strategy, cands, session=f"s{i}", now=0)
    assert strategy.pinned_sessions == 1023
    pick(strategy, cands, session="late", now=10)
    assert strategy.pinned_sessions == 1


# ---- least-busy ----------------------------------------------------------------------------


def test_least_busy_starts_on_fewest_in_flight() -> None:
    """least-busy starts on the fewest in-flight calls; ties by weight, then order."""
    strategy = LeastBusy(exploration_share=0)
    cands = targets(1, 1, 2)
    strategy.call_started("k2")
    strategy.call_started("k0")
    assert pick(strategy, cands) == (1, "least-busy: 0 in flight")
    strategy.call_finished("k2")
    assert pick(strategy, cands)[0] == 2


def test_least_busy_never_counts_below_zero() -> None:
    """An extra call_finished leaves the in-flight count at 0."""
    strategy = LeastBusy()
    strategy.call_finished("k0")
    strategy.call_started("k0")
    strategy.call_finished("k0")
    strategy.call_finished("k0")
    assert strategy.in_flight("k0") == 0


def test_least_busy_explores_like_lowest_latency() -> None:
    """least-busy sends its exploration share to under-sampled targets."""
    strategy = LeastBusy(min_requests=2, exploration_share=0.5)
    feed(strategy, "k0", 0.1, 2)
    starts = [pick(strategy, targets(1, 1))[0] for _ in range(4)]
    assert starts == [0, 1, 0, 1]


# ---- configuration -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "kind"),
    [
        (None, Failover),
        ("round-robin", RoundRobin),
        ({"type": "weighted"}, Weighted),
        ({"type": "lowest-cost"}, LowestCost),
        ({"type": "lowest-latency", "window_minutes": 5, "min_requests": 3}, LowestLatency),
        ({"type": "least-busy", "exploration_share": 0}, LeastBusy),
    ],
)
def test_strategy_from_config_builds_each_type(
    spec: Mapping[str, object] | str | None, kind: type
) -> None:
    """Each strategy type builds its class; options sit flat beside type."""
    strategy = strategy_from_config(spec)
    assert isinstance(strategy, kind)
    assert isinstance(strategy, Strategy)


def test_strategy_from_config_passes_options_and_pin_ttl() -> None:
    """Options and session_pin_ttl reach the lowest-latency strategy."""
    strategy = strategy_from_config(
        {"type": "lowest-latency", "window_minutes": 5, "exploration_share": 0.1},
        session_pin_ttl=60,
    )
    assert isinstance(strategy, LowestLatency)
    assert (strategy.window_minutes, strategy.exploration_share) == (5, 0.1)
    assert (strategy.min_requests, strategy.session_pin_ttl) == (20, 60)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"type": "round_robin"}, r"strategy\.type must be one of .*did you mean 'round-robin'"),
        ({"type": "fastest"}, r"strategy\.type must be one of failover, round-robin"),
        ({"window_minutes": 5}, r"strategy\.type is required: one of failover, round-robin"),
        (
            {"type": "lowest-latency", "window_minute": 5},
            r"strategy\.window_minute is not an option of lowest-latency .*'window_minutes'",
        ),
        (
            {"type": "failover", "min_requests": 5},
            r"strategy\.min_requests is not an option of failover \(options: none\)",
        ),
        (
            {"type": "lowest-latency", "window_minutes": 0},
            r"strategy\.window_minutes must be a number from 1 to 1440 \(got 0\)",
        ),
        (
            {"type": "lowest-latency", "window_minutes": 1441},
            r"strategy\.window_minutes must be a number from 1 to 1440",
        ),
        (
            {"type": "least-busy", "min_requests": 0},
            r"strategy\.min_requests must be a whole number from 1 to 1000000 \(got 0\)",
        ),
        (
            {"type": "least-busy", "min_requests": 2.5},
            r"strategy\.min_requests must be a whole number",
        ),
        (
            {"type": "lowest-latency", "exploration_share": 0.6},
            r"strategy\.exploration_share must be a number from 0 to 0\.5 \(got 0\.6\)",
        ),
        (
            {"type": "lowest-latency", "exploration_share": True},
            r"strategy\.exploration_share must be a number from 0 to 0\.5 \(got true\)",
        ),
        (
            {"type": 5},
            r"strategy\.type must be one of failover, .* \(got 5\)$",
        ),
    ],
)
def test_strategy_validation_messages(spec: dict[str, object], message: str) -> None:
    """Invalid strategy config names the option path and the rule, with a suggestion."""
    with pytest.raises(ConfigError, match=message):
        strategy_from_config(spec, path="strategy")


def test_strategy_options_accept_camel_case() -> None:
    """`windowMinutes`, `minRequests` and `explorationShare` reach the strategy like snake_case."""
    strategy = strategy_from_config(
        {"type": "lowest-latency", "windowMinutes": 5, "minRequests": 3, "explorationShare": 0.1}
    )
    assert isinstance(strategy, LowestLatency)
    assert (strategy.window_minutes, strategy.min_requests, strategy.exploration_share) == (
        5,
        3,
        0.1,
    )


def test_camel_case_options_are_checked_at_their_written_path() -> None:
    """A camelCase option out of range, or one option in two spellings, is refused where written."""
    with pytest.raises(ConfigError) as caught:
        strategy_from_config(
            {"type": "least-busy", "windowMinutes": 0, "minRequests": 2, "min_requests": 3},
            path="strategy",
        )
    assert caught.value.errors == (
        ("strategy.windowMinutes", "must be a number from 1 to 1440 (got 0)"),
        (
            "strategy.min_requests",
            "gives 'minRequests' a second time (camelCase and snake_case name one option)",
        ),
    )


def test_strategy_validation_collects_every_problem() -> None:
    """Every bad option is listed in ConfigError.errors under the given path."""
    with pytest.raises(ConfigError) as caught:
        strategy_from_config(
            {"type": "lowest-latency", "window_minutes": 0, "min_requests": -1, "x": 1},
            path="routes[1].strategy",
        )
    assert [path for path, _ in caught.value.errors] == [
        "routes[1].strategy.window_minutes",
        "routes[1].strategy.min_requests",
        "routes[1].strategy.x",
    ]


@pytest.mark.parametrize(
    ("weights", "flags", "kind", "message"),
    [
        (
            [1, -1],
            [False, False],
            "failover",
            r"targets\[1\]\.weight must be a whole number from 0",
        ),
        ([1_000_001], [False], "failover", r"targets\[0\]\.weight .*1000000 \(got 1000001\)"),
        ([1.5], [False], "failover", r"targets\[0\]\.weight must be a whole number"),
        ([True], [False], "failover", r"targets\[0\]\.weight must be a whole number"),
        ([0, 0], [False, False], "weighted", r"targets a weighted route needs a target"),
        ([0, 5], [False, True], "weighted", r"not fallback_only with a weight above 0"),
    ],
)
def test_validate_weights_errors(
    weights: list[object], flags: list[bool], kind: str, message: str
) -> None:
    """Weights must be whole 0..1,000,000; weighted needs a positive non-fallback-only one."""
    with pytest.raises(ConfigError, match=message):
        validate_weights(weights, flags, kind, "targets")


def test_validate_weights_accepts_valid_routes() -> None:
    """Zero weights are fine outside weighted, and beside one positive starter under weighted."""
    validate_weights([0, 0], [False, False], "failover")
    validate_weights([0, 2, 0], [False, False, True], "weighted")


# ---- the latency window --------------------------------------------------------------------


def test_percentile_nearest_rank() -> None:
    """P95 by nearest rank: the 95th of 100 sorted values, the single value of one."""
    assert percentile([float(i) for i in range(1, 101)], 0.95) == 95.0
    assert percentile([3.0], 0.95) == 3.0


def test_window_counts_exactly_beyond_its_sample_cap() -> None:
    """The count stays exact past max_samples; the P95 reads the most recent samples."""
    window = LatencyWindow(60.0, max_samples=10)
    for i in range(25):
        window.add("k", 1.0 if i < 15 else 2.0, now=float(i))
    assert window.count("k", 25.0) == 25
    assert window.p95("k", 25.0) == 2.0
    assert window.count("k", 68.5) == 16  # samples 9..24; 9..14 only as per-second counts
    assert window.count("k", 74.5) == 10
    assert window.count("k", 83.5) == 1
    window.add("k", 3.0, now=100.25)
    window.add("k", 3.0, now=100.5)
    assert window.count("k", 100.5) == 2
    assert window.p95("other", 0.0) is None
    assert window.count("other", 0.0) == 0
