"""The refreshing access token of cloud-credential providers, on a fake clock: refreshed before
expiry in the background, never waited on once held, a failed refresh kept quiet until expiry."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import pytest

from turnout.errors import AuthenticationFailed, ProviderError
from turnout.providers._cloud_token import CloudToken
from turnout.routing.clock import FakeClock

if TYPE_CHECKING:
    from collections.abc import Callable

LIFETIME = 3600.0


class Fetcher:
    """A scripted token fetch: `token-1`, `token-2` … each valid for `LIFETIME` seconds;
    `fail` makes the next fetches raise; `gate` (when set) holds a fetch until opened."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.calls = 0
        self.fail: Exception | None = None
        self.gate: asyncio.Event | None = None

    def __call__(self) -> tuple[str, float | None]:
        self.calls += 1
        if self.fail is not None:
            raise self.fail
        return f"token-{self.calls}", self.clock.wall() + LIFETIME

    async def run(self, fetch: Callable[[], Any]) -> Any:
        """Stands in for the worker thread: waits on `gate` first, when there is one."""
        if self.gate is not None:
            await self.gate.wait()
        return fetch()


def fail(exc: Exception) -> ProviderError:
    return AuthenticationFailed(f"no token: {exc}", status=401, provider="vx")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def make(clock: FakeClock, fetcher: Fetcher, **options: Any) -> CloudToken:
    return CloudToken(
        fetcher, clock=clock, fail=fail, name="vx", run_blocking=fetcher.run, **options
    )


async def test_first_call_waits_then_refresh_runs_before_expiry(clock: FakeClock) -> None:
    """One fetch for the first call; the background refresh comes `margin` s before expiry."""
    fetcher = Fetcher(clock)
    token = make(clock, fetcher, margin=300.0)
    assert token.current() is None
    assert await token.ready() == "token-1"
    await clock.settle()
    clock.advance(LIFETIME - 300.0 - 1.0)
    await clock.settle()
    assert fetcher.calls == 1
    clock.advance(1.0)
    await clock.settle()
    assert fetcher.calls == 2
    assert token.current() == "token-2"
    assert token.expiry == clock.wall() + LIFETIME
    await token.aclose()


async def test_a_call_never_waits_once_a_token_is_held(clock: FakeClock) -> None:
    """While the background refresh hangs, calls get the held token at once."""
    fetcher = Fetcher(clock)
    token = make(clock, fetcher)
    await token.ready()
    await clock.settle()
    fetcher.gate = asyncio.Event()
    clock.advance(LIFETIME - 300.0)
    await clock.settle()
    assert fetcher.calls == 1  # the refresh is under way, held at the gate
    ready = asyncio.ensure_future(token.ready())
    await asyncio.sleep(0)
    assert ready.done()
    assert ready.result() == "token-1"
    fetcher.gate.set()
    await clock.settle()
    assert token.current() == "token-2"
    await token.aclose()


async def test_concurrent_first_calls_share_one_fetch(clock: FakeClock) -> None:
    """Calls that find no token wait for one fetch together."""
    fetcher = Fetcher(clock)
    fetcher.gate = asyncio.Event()
    token = make(clock, fetcher)
    waiting = [asyncio.ensure_future(token.ready()) for _ in range(5)]
    await clock.settle()
    fetcher.gate.set()
    assert await asyncio.gather(*waiting) == ["token-1"] * 5
    assert fetcher.calls == 1
    await token.aclose()


async def test_a_failed_refresh_keeps_the_old_token_until_expiry(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """A failing background refresh keeps the token until it expires, is retried, and is
    logged without the token; after expiry a call waits and gets the failure."""
    fetcher = Fetcher(clock)
    token = make(clock, fetcher, margin=300.0, retry=60.0)
    await token.ready()
    await clock.settle()
    fetcher.fail = RuntimeError("token endpoint said 503")
    with caplog.at_level(logging.WARNING, logger="turnout.providers"):
        clock.advance(LIFETIME - 300.0)
        await clock.settle()
        assert token.current() == "token-1"
        clock.advance(60.0)
        await clock.settle()
    assert fetcher.calls == 3  # the first fetch, then two failed refreshes
    assert token.failures == 2
    assert "token endpoint said 503" in caplog.text
    assert "token-1" not in caplog.text
    assert await token.ready() == "token-1"
    clock.advance(240.0)
    await clock.settle()
    assert token.current() is None
    with pytest.raises(AuthenticationFailed, match="token endpoint said 503"):
        await token.ready()
    fetcher.fail = None
    assert (await token.ready()).startswith("token-")
    await token.aclose()


async def test_an_unknown_expiry_is_taken_as_short_lived(clock: FakeClock) -> None:
    """A token without an expiry is refreshed within the hour all the same."""
    calls: list[int] = []

    def fetch() -> tuple[str, float | None]:
        calls.append(1)
        return "opaque", None

    async def run(function: Callable[[], Any]) -> Any:
        return function()

    token = CloudToken(fetch, clock=clock, fail=fail, name="vx", run_blocking=run)
    await token.ready()
    await clock.settle()
    assert token.expiry < clock.wall() + LIFETIME
    clock.advance(LIFETIME)
    await clock.settle()
    assert len(calls) >= 2
    await token.aclose()
