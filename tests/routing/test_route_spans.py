"""OpenTelemetry spans of `Route` used as a library: a route span per request under the
caller's current span, a call span per attempt with exact attributes, hedged calls each with
their own span, a stream's call span open until the stream ends, ERROR on failure; and with no
tracer provider, no span and no SDK import."""

from __future__ import annotations

import itertools
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import pytest
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

from tests._spans import attributes, collected_spans, named
from turnout import errors
from turnout.routing.route import Route, Target
from turnout.testing import FakeClock, ScriptedModel, isolated_health, turn
from turnout.wire.model import Message, Usage

if TYPE_CHECKING:
    from collections.abc import Iterator

    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

QUESTION = [Message.user("Why is checkout failing?")]
CALL = {"gen_ai.operation.name": "chat", "turnout.route": "triage", "turnout.hedge": False}


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """The spans that ended during the test."""
    with collected_spans() as exporter:
        yield exporter


def scripted(provider: str, model: str, *turns: object, clock: FakeClock | None = None) -> Any:
    """A scripted model of `provider` whose own model is `model`."""
    return ScriptedModel(provider, model, list(turns), clock=clock)  # type: ignore[arg-type]


async def test_failover_makes_a_route_span_and_a_span_per_call(
    spans: InMemorySpanExporter,
) -> None:
    """A 503 then an answer: under the caller's span, `route triage` with two CLIENT call
    spans, the failed one ERROR with its class and status, the other with usage and model."""
    health = isolated_health()
    route = Route(
        "triage",
        [
            Target("primary", scripted("northwind", "nw-large", turn.fail(503))),
            Target("backup", scripted("local", "llama3", turn.answer("ok", usage=Usage(7, 2)))),
        ],
        health=health,
    )
    with trace.get_tracer("app").start_as_current_span("handle ticket") as outer:
        await health.clock.run(route.complete(QUESTION))
    finished = spans.get_finished_spans()
    assert [span.name for span in finished] == [
        "chat nw-large",
        "chat llama3",
        "route triage",
        "handle ticket",
    ]
    failed, answered, routed, _ = finished
    assert routed.parent is not None
    assert routed.parent.span_id == outer.get_span_context().span_id
    assert routed.kind == SpanKind.INTERNAL
    for call in (failed, answered):
        assert call.parent is not None
        assert call.parent.span_id == routed.context.span_id
        assert call.kind == SpanKind.CLIENT
    assert attributes(routed) == {
        "turnout.route": "triage",
        "gen_ai.operation.name": "chat",
        "turnout.outcome": "answered",
        "turnout.all_failed": False,
        "turnout.attempts": 2,
        "turnout.answered": "backup",
        "gen_ai.response.model": "llama3",
    }
    assert attributes(failed) == {
        **CALL,
        "gen_ai.provider.name": "northwind",
        "turnout.target": "primary",
        "turnout.provider": "northwind",
        "turnout.attempt": 1,
        "gen_ai.request.model": "nw-large",
        "turnout.outcome": "failed",
        "turnout.class": "provider_error",
        "error.type": "provider_error",
        "http.response.status_code": 503,
    }
    assert (failed.status.status_code, failed.status.description) == (
        StatusCode.ERROR,
        "provider_error",
    )
    assert attributes(answered) == {
        **CALL,
        "gen_ai.provider.name": "local",
        "turnout.target": "backup",
        "turnout.provider": "local",
        "turnout.attempt": 2,
        "gen_ai.request.model": "llama3",
        "turnout.outcome": "answered",
        "gen_ai.usage.input_tokens": 7,
        "gen_ai.usage.output_tokens": 2,
        "gen_ai.response.model": "llama3",
        "gen_ai.response.finish_reasons": ("stop",),
    }
    assert answered.status.status_code == routed.status.status_code == StatusCode.UNSET


async def test_a_request_whose_calls_all_fail_is_an_error(spans: InMemorySpanExporter) -> None:
    """Two 503s: the route span says all_failed, with ERROR and the ending's class."""
    health = isolated_health()
    route = Route(
        "triage",
        [
            Target("primary", scripted("northwind", "nw-large", turn.fail(503))),
            Target("backup", scripted("local", "llama3", turn.fail(503))),
        ],
        health=health,
    )
    with pytest.raises(errors.RouteExhausted):
        await health.clock.run(route.complete(QUESTION))
    (routed,) = named(spans.get_finished_spans(), "route triage")
    got = attributes(routed)
    assert (got["turnout.outcome"], got["turnout.all_failed"], got["turnout.attempts"]) == (
        "failed",
        True,
        2,
    )
    assert got["turnout.class"] == got["error.type"]
    assert routed.status.status_code == StatusCode.ERROR
    assert routed.status.description == got["turnout.class"]


async def test_an_embeddings_request_makes_embeddings_spans(spans: InMemorySpanExporter) -> None:
    """`Route.embed`: the route span and the call span say `embeddings`, with the call's usage
    and the model that answered."""
    health = isolated_health()
    model = scripted("local", "embed-small", turn.embedding([[0.1, 0.2]], usage=Usage(4, 0)))
    route = Route("triage", [Target("backup", model)], health=health)
    await health.clock.run(route.embed("checkout"))
    call, routed = spans.get_finished_spans()
    assert (call.name, routed.name) == ("embeddings embed-small", "route triage")
    assert attributes(routed)["gen_ai.operation.name"] == "embeddings"
    got = attributes(call)
    assert {
        k: got[k]
        for k in (
            "gen_ai.operation.name",
            "gen_ai.usage.input_tokens",
            "gen_ai.usage.output_tokens",
            "gen_ai.response.model",
        )
    } == {
        "gen_ai.operation.name": "embeddings",
        "gen_ai.usage.input_tokens": 4,
        "gen_ai.usage.output_tokens": 0,
        "gen_ai.response.model": "embed-small",
    }
    assert "gen_ai.response.finish_reasons" not in got


async def test_hedged_calls_each_get_a_span(spans: InMemorySpanExporter) -> None:
    """A call still running at `hedge_after` and its hedge: two call spans, the hedge marked,
    the loser `lost_race` and not an error."""
    clock = FakeClock()
    health = isolated_health(clock=clock)
    route = Route(
        "triage",
        [
            Target("primary", scripted("northwind", "nw-large", turn.hang())),
            Target(
                "backup", scripted("local", "llama3", turn.answer("ok", delay=0.5), clock=clock)
            ),
        ],
        hedge_after=1,
        health=health,
    )
    await clock.run(route.complete(QUESTION))
    finished = spans.get_finished_spans()
    (slow,) = named(finished, "chat nw-large")
    (fast,) = named(finished, "chat llama3")
    assert (attributes(slow)["turnout.outcome"], attributes(slow)["turnout.hedge"]) == (
        "lost_race",
        False,
    )
    assert (attributes(fast)["turnout.outcome"], attributes(fast)["turnout.hedge"]) == (
        "answered",
        True,
    )
    assert slow.status.status_code == fast.status.status_code == StatusCode.UNSET


async def test_a_streams_call_span_ends_when_the_stream_ends(spans: InMemorySpanExporter) -> None:
    """At the first chunk no span has ended; after the last, the call span holds the stream's
    usage and finish reason and ended before the route span."""
    clock = FakeClock()
    health = isolated_health(clock=clock)
    model = scripted(
        "local",
        "llama3",
        turn.stream(["Roll ", turn.sleep(5), "back."], usage=Usage(3, 2)),
        clock=clock,
    )
    route = Route("triage", [Target("backup", model)], health=health)

    async def read() -> None:
        stream = route.stream(QUESTION)
        first = await anext(stream)
        assert first.delta == "Roll "
        assert spans.get_finished_spans() == ()
        async for _ in stream:
            pass

    await clock.run(read())
    call, routed = spans.get_finished_spans()
    assert (call.name, routed.name) == ("chat llama3", "route triage")
    got = attributes(call)
    assert (got["turnout.outcome"], got["gen_ai.response.finish_reasons"]) == (
        "answered",
        ("stop",),
    )
    assert (got["gen_ai.usage.input_tokens"], got["gen_ai.usage.output_tokens"]) == (3, 2)


async def test_a_broken_stream_ends_its_spans_as_errors(spans: InMemorySpanExporter) -> None:
    """A cut after the first token: the call span fails with its class, the route span fails."""
    health = isolated_health()
    route = Route(
        "triage",
        [Target("backup", scripted("local", "llama3", turn.stream(["Roll "], then=turn.cut())))],
        health=health,
    )
    with pytest.raises(errors.StreamBroken):
        await health.clock.run(_drain(route))
    call, routed = spans.get_finished_spans()
    assert attributes(call)["turnout.outcome"] == "failed"
    assert attributes(call)["turnout.class"] == "provider_error"
    assert call.status.status_code == routed.status.status_code == StatusCode.ERROR


async def test_a_route_used_as_a_target_nests_its_span_under_the_call(
    spans: InMemorySpanExporter,
) -> None:
    """An inner route as the outer route's target: `route inner` is a child of the outer call's
    span, and its own call span a child of it."""
    health = isolated_health()
    inner = Route(
        "inner", [Target("local", scripted("local", "llama3", turn.answer("ok")))], health=health
    )
    outer = Route("triage", [Target("nested", inner)], health=health)
    await health.clock.run(outer.complete(QUESTION))
    by_name = {span.name: span for span in spans.get_finished_spans()}
    assert set(by_name) == {"route triage", "chat", "route inner", "chat llama3"}
    chain = [by_name[name] for name in ("route triage", "chat", "route inner", "chat llama3")]
    for parent, child in itertools.pairwise(chain):
        assert child.parent is not None
        assert child.parent.span_id == parent.context.span_id
    assert attributes(by_name["chat"])["turnout.provider"] == "inner"


async def _drain(route: Route) -> None:
    async for _ in route.stream(QUESTION):
        pass


def test_without_a_tracer_provider_nothing_is_traced_and_no_sdk_is_imported() -> None:
    """In a fresh process with no tracer provider, a routed request starts no recording span,
    and neither turnout nor its gateway imports the OpenTelemetry SDK."""
    code = (
        "import asyncio, sys\n"
        "import turnout.gateway.server.app\n"
        "from turnout.gateway.observe.observer import Observer\n"
        "from turnout.routing import driver\n"
        "from turnout.routing.route import Route, Target\n"
        "from turnout.testing import ScriptedModel, isolated_health, turn\n"
        "from turnout.wire.model import Message\n"
        "started = []\n"
        "real = driver.start_request\n"
        "driver.start_request = lambda state: started.append(real(state))\n"
        "health = isolated_health()\n"
        "route = Route('r', [Target('a', ScriptedModel('p', 'm', [turn.answer('ok')]))],"
        " health=health)\n"
        "asyncio.run(health.clock.run(route.complete([Message.user('hi')])))\n"
        "print(started, Observer().spans, 'opentelemetry.sdk' in sys.modules)\n"
    )
    result = subprocess.run(  # noqa: S603 - this interpreter, fixed code
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.split() == ["[None]", "None", "False"]
