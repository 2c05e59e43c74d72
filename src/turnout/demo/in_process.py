"""`turnout demo --library`: routed calls over scripted models, each routing record printed as a
table.

Everything runs on a fake clock over `ScriptedModel`s, so the demo is instant, offline and needs
no API key. Each scenario prints a one-line title, the routing record(s) and the outcome.
"""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING

from turnout.errors import ProviderError, TurnoutError
from turnout.routing.health import Breaker, Health
from turnout.routing.route import Route, Target
from turnout.testing import FakeClock, ScriptedModel, turn
from turnout.wire.model import ChatResponse, Message

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from typing import TextIO

__all__ = ["SCENARIOS", "run_library_demo"]

QUESTION = [Message.user("Why is checkout failing?")]
ROLL_BACK = "Roll back deploy 412, because the error rate rose with it."


def _needs_reason(response: ChatResponse) -> str | None:
    return None if "because" in response.text.lower() else "it gives no reason"


def _show(out: TextIO, response: ChatResponse) -> None:
    out.write(f"{response.routing}\nAnswer: {response.text}\n")


async def triage(out: TextIO) -> None:
    """A 429, a refusal and an answer without a reason, then a good answer."""
    clock = FakeClock()
    route = Route(
        "triage",
        [
            Target("primary", ScriptedModel("northwind", "nw-large", [turn.fail(429)])),
            Target("careful", ScriptedModel("contoso", "ct-guarded", [turn.refuse()])),
            Target("terse", ScriptedModel("fabrikam", "fb-mini", [turn.answer("Roll back.")])),
            Target("local", ScriptedModel("local", "llama-local", [turn.answer(ROLL_BACK)])),
        ],
        accept=_needs_reason,
        health=Health(clock=clock),
    )
    _show(out, await clock.run(route.complete(QUESTION)))


async def fatal(out: TextIO) -> None:
    """A 401 stops the route at once with the provider's own error."""
    clock = FakeClock()
    bad_key = turn.fail(401, message="401 Unauthorized: invalid API key")
    route = Route(
        "fatal",
        [
            Target("primary", ScriptedModel("northwind", "nw-large", [bad_key])),
            Target("backup", ScriptedModel("local", "llama-local", [turn.answer(ROLL_BACK)])),
        ],
        health=Health(clock=clock),
    )
    try:
        await clock.run(route.complete(QUESTION))
    except ProviderError as error:
        out.write(f"{error.routing}\nError: {error.message}\n")


async def breaker(out: TextIO) -> None:
    """Two routes share one health: one 503 in each opens northwind's breaker for both."""
    clock = FakeClock()
    health = Health(breaker=Breaker(failures=2, open_for=60), key_by="provider", clock=clock)
    steady = ScriptedModel("local", "llama-local", [turn.answer(ROLL_BACK)] * 4)
    large = ScriptedModel("northwind", "nw-large", [turn.fail(503), turn.answer(ROLL_BACK)])
    small = ScriptedModel("northwind", "nw-small", [turn.fail(503)])
    diagnose = Route("diagnose", [Target("large", large), Target("steady", steady)], health=health)
    summarise = Route(
        "summarise", [Target("small", small), Target("steady", steady)], health=health
    )
    for run in (1, 2):
        out.write(f"Run {run}\n")
        for route in (diagnose, summarise):
            response = await clock.run(route.complete(QUESTION))
            out.write(f"{response.routing}\n")
    clock.advance(60)
    out.write(f"(+60 s)\nHealth: {health.snapshot()}\nRun 3\n")
    response = await clock.run(diagnose.complete(QUESTION))
    out.write(f"{response.routing}\nHealth: {health.snapshot()}\n")


async def hedge(out: TextIO) -> None:
    """Primary hangs; after 2 s local starts beside it and wins the race."""
    clock = FakeClock()
    route = Route(
        "hedged",
        [
            Target("primary", ScriptedModel("northwind", "nw-large", [turn.hang()])),
            Target("local", ScriptedModel("local", "llama-local", [turn.answer(ROLL_BACK)])),
        ],
        hedge_after=2,
        health=Health(clock=clock),
    )
    _show(out, await clock.run(route.complete(QUESTION)))
    out.write(f"Answered after {clock.now():g} s (fake time)\n")


async def stream(out: TextIO) -> None:
    """A stream fails over before its first token; after it, the route is committed."""
    clock = FakeClock()
    pieces = ["Roll back ", "deploy 412, ", "because the error rate rose with it."]
    route = Route(
        "streaming",
        [
            Target("primary", ScriptedModel("northwind", "nw-large", [turn.fail(503)])),
            Target("local", ScriptedModel("local", "llama-local", [turn.stream(pieces)])),
        ],
        health=Health(clock=clock),
    )

    async def read() -> None:
        text = []
        async for chunk in route.stream(QUESTION):
            text.append(chunk.delta)
            if chunk.routing is not None:
                out.write(f"{chunk.routing}\n")
        out.write(f"Streamed: {''.join(text)}\n")

    await clock.run(read())


SCENARIOS: tuple[tuple[str, Callable[[TextIO], Awaitable[None]]], ...] = (
    ("Triage: fail over past a 429, a refusal and an answer without a reason", triage),
    ("Fatal: a 401 stops the route at once", fatal),
    ("Breaker: two routes share one health and skip a failing provider", breaker),
    ("Hedge: a slow target gets company after 2 s", hedge),
    ("Stream: fail over before the first token", stream),
)
"""Each scenario's title and coroutine."""


async def _run_all(out: TextIO) -> None:
    for number, (title, scenario) in enumerate(SCENARIOS, start=1):
        if number > 1:
            out.write("\n")
        out.write(f"{number}. {title}\n")
        try:
            await scenario(out)
        except TurnoutError as error:  # a scenario that ends in an error still shows it
            out.write(f"Error: {error}\n")


def run_library_demo(out: TextIO | None = None) -> None:
    """Run every library scenario, writing to `out` (default: standard output)."""
    asyncio.run(_run_all(out if out is not None else sys.stdout))
