"""Fallback routes: escalation after a route fails."""

from __future__ import annotations

import pytest

from turnout import errors
from turnout.routing.route import Route, Target
from turnout.testing import ScriptedModel, isolated_health, turn
from turnout.wire.model import Message

QUESTION = [Message.user("Why is checkout failing?")]
TOO_LONG = "This model's maximum context length is 8192 tokens"
FLAGGED = "flagged by our content management policy"


def target(name: str, *turns: object, **options: object) -> Target:
    """A target over a scripted model whose provider is the target's name."""
    return Target(name, ScriptedModel(name, f"{name}-m", list(turns)), **options)  # type: ignore[arg-type]


async def test_a_general_fallback_serves_after_retryable_failures() -> None:
    """Every target of the first route fails retryably: the general fallback answers."""
    health = isolated_health()
    backup = Route("backup", [target("z", turn.answer("ok"))], health=health)
    route = Route(
        "main",
        [target("a", turn.fail(503)), target("b", turn.fail(429))],
        fallbacks={"general": [backup]},
        health=health,
    )
    response = await health.clock.run(route.complete(QUESTION))
    record = response.routing
    assert record is not None
    assert (record.route, record.fallback_route, record.fallback_kind) == (
        "main",
        "backup",
        "general",
    )
    assert record.outcomes() == [("a", "failed"), ("b", "failed"), ("z", "answered")]
    assert record.fallbacks == 2
    assert "fallback route 'backup' (general)" in str(record)


async def test_a_terminal_failure_does_not_use_the_general_fallback() -> None:
    """A 401 ends the request: the general fallback is not asked."""
    health = isolated_health()
    fallback_model = ScriptedModel("z", "z-m", [turn.answer("never")])
    backup = Route("backup", [Target("z", fallback_model)], health=health)
    route = Route(
        "main", [target("a", turn.fail(401))], fallbacks={"general": [backup]}, health=health
    )
    with pytest.raises(errors.AuthenticationFailed):
        await health.clock.run(route.complete(QUESTION))
    assert fallback_model.calls == 0


async def test_route_ineligible_does_not_use_the_general_fallback() -> None:
    """Every target ineligible: RouteIneligible, no fallback hop."""
    health = isolated_health()
    fallback_model = ScriptedModel("z", "z-m", [])
    backup = Route("backup", [Target("z", fallback_model)], health=health)
    route = Route(
        "main",
        [target("a", eligible=lambda r, c: "no")],
        fallbacks={"general": [backup]},
        health=health,
    )
    with pytest.raises(errors.RouteIneligible):
        await health.clock.run(route.complete(QUESTION))
    assert fallback_model.calls == 0


async def test_a_context_length_failure_goes_to_the_context_fallback() -> None:
    """context_length is not passed to the next target but to fallbacks.context."""
    health = isolated_health()
    sibling = ScriptedModel("b", "b-m", [])
    long_context = Route("long-context", [target("big", turn.answer("ok"))], health=health)
    route = Route(
        "main",
        [target("a", turn.fail(400, message=TOO_LONG)), Target("b", sibling)],
        fallbacks={"context": [long_context]},
        health=health,
    )
    response = await health.clock.run(route.complete(QUESTION))
    assert response.routing is not None
    assert response.routing.fallback_kind == "context"
    assert response.routing.outcomes() == [("a", "failed"), ("b", "not_tried"), ("big", "answered")]
    assert sibling.calls == 0


async def test_a_content_filtered_failure_goes_to_the_content_fallback() -> None:
    """content_filtered goes to fallbacks.content when declared."""
    health = isolated_health()
    lenient = Route("lenient", [target("l", turn.answer("ok"))], health=health)
    route = Route(
        "main",
        [target("a", turn.fail(400, message="flagged by our content management policy"))],
        fallbacks={"content": [lenient]},
        health=health,
    )
    response = await health.clock.run(route.complete(QUESTION))
    assert response.routing is not None
    assert response.routing.fallback_kind == "content"


async def test_the_first_routes_max_attempts_keeps_counting_across_hops() -> None:
    """max_attempts belongs to the first route: spent there, the fallback makes no call."""
    health = isolated_health()
    fallback_model = ScriptedModel("z", "z-m", [turn.answer("never")])
    backup = Route("backup", [Target("z", fallback_model)], health=health)
    route = Route(
        "main",
        [target("a", turn.fail(503)), target("b", turn.fail(503))],
        max_attempts=2,
        fallbacks={"general": [backup]},
        health=health,
    )
    with pytest.raises(errors.RouteExhausted):
        await health.clock.run(route.complete(QUESTION))
    assert fallback_model.calls == 0


async def test_fallback_hops_chain_and_stop_after_three() -> None:
    """Fallbacks of fallbacks are followed, at most 3 hops per request."""
    health = isolated_health()
    fifth_model = ScriptedModel("e", "e-m", [turn.answer("never")])
    fifth = Route("fifth", [Target("e", fifth_model)], health=health)
    fourth = Route(
        "fourth", [target("d", turn.fail(503))], fallbacks={"general": [fifth]}, health=health
    )
    third = Route(
        "third", [target("c", turn.fail(503))], fallbacks={"general": [fourth]}, health=health
    )
    second = Route(
        "second", [target("b", turn.fail(503))], fallbacks={"general": [third]}, health=health
    )
    first = Route(
        "first", [target("a", turn.fail(503))], fallbacks={"general": [second]}, health=health
    )
    with pytest.raises(errors.RouteExhausted) as caught:
        await health.clock.run(first.complete(QUESTION))
    assert fifth_model.calls == 0
    assert caught.value.routing is not None
    assert caught.value.routing.fallback_route == "fourth"
    assert [e.target for e in caught.value.attempts] == ["a", "b", "c", "d"]


async def test_a_hop_follows_only_fallbacks_of_its_own_kind() -> None:
    """Reached by a content hop, a route that fails retryably ends the request: its general
    fallback is not asked, though it would have answered."""
    health = isolated_health()
    backup_model = ScriptedModel("z", "z-m", [turn.answer("never")])
    backup = Route("backup", [Target("z", backup_model)], health=health)
    lenient = Route(
        "lenient", [target("l", turn.fail(503))], fallbacks={"general": [backup]}, health=health
    )
    route = Route(
        "main",
        [target("a", turn.fail(400, message=FLAGGED))],
        fallbacks={"content": [lenient]},
        health=health,
    )
    with pytest.raises(errors.RouteExhausted) as caught:
        await health.clock.run(route.complete(QUESTION))
    assert backup_model.calls == 0
    record = caught.value.routing
    assert record is not None
    assert (record.fallback_route, record.fallback_kind) == ("lenient", "content")
    assert record.outcomes() == [("a", "failed"), ("l", "failed")]


async def test_a_content_hop_goes_on_along_content_fallbacks() -> None:
    """A route reached by a content hop that is content-filtered too hops on to its own
    content fallback."""
    health = isolated_health()
    last = Route("last", [target("z", turn.answer("ok"))], health=health)
    middle = Route(
        "middle",
        [target("m", turn.fail(400, message=FLAGGED))],
        fallbacks={"content": [last]},
        health=health,
    )
    route = Route(
        "main",
        [target("a", turn.fail(400, message=FLAGGED))],
        fallbacks={"content": [middle]},
        health=health,
    )
    response = await health.clock.run(route.complete(QUESTION))
    assert response.routing is not None
    assert (response.routing.fallback_route, response.routing.fallback_kind) == (
        "last",
        "content",
    )


async def test_a_stream_fails_over_to_a_fallback_route_before_commit() -> None:
    """Streams escalate to fallback routes too, before the first token."""
    health = isolated_health()
    backup = Route("backup", [target("z", turn.stream(["ok"]))], health=health)
    route = Route(
        "main", [target("a", turn.fail(503))], fallbacks={"general": [backup]}, health=health
    )

    async def read() -> str:
        return "".join([chunk.delta async for chunk in route.stream(QUESTION)])

    assert await health.clock.run(read()) == "ok"
