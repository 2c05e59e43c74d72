"""The same five scenarios over every deployment shape: real `turnout serve` processes (one, or
`--workers 2`; one replica, or three) on shared state in memory or in Redis and a store on
SQLite or PostgreSQL, in front of the mock upstream, over real HTTP.

| state | store | workers | replicas |
|---|---|---|---|
| memory, redis | sqlite, postgresql | 1, 2 | 1 |
| memory, redis | postgresql | 1 | 3 |

Not in the matrix (see `_matrix`): SQLite under three replicas (replicas share a PostgreSQL
store), and three replicas of two workers each (six replicas: no seam the others lack).

Each shape is started once and its processes serve all five scenarios. Each scenario reaches
every serving process through a connection of its own (`Channel`: one keep-alive connection
stays with the worker that accepted it). Where health is kept per process (`state: memory`
with several processes), the breaker is checked on the process that tripped it, which is what
every shape promises.

1. A breaker trips on two 503s, and after its cooldown the first request on the process that
   tripped it probes the failed target, which serves it.
2. A key from the config file and a key made through the admin API in a second project are each
   served on their own project's route, on every process, and neither on the other's.
3. A route and a key made through the admin API are served by every process, and the key
   once revoked is refused by every process, within about a second.
4. A stream whose first target fails before its first token is served by the second target,
   with no error, on every process.
5. Every request (answered, failed over, streamed, refused for its key) through every process
   leaves exactly one audit row in the store.
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from typing import TYPE_CHECKING, Any, cast

import openai
import pytest

from tests.e2e._replicas import until
from tests.shapes._deployment import (
    ADMIN_KEY,
    AUDIT_KEY,
    COOLDOWN,
    FAILURE_THRESHOLD,
    FILE_KEY,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    import httpx
    import httpx2
    from openai.types.chat import ChatCompletionMessageParam

    from tests.shapes._channels import Channel
    from tests.shapes._deployment import Deployment

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    # Which worker accepted a connection is read from /proc (see _channels).
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]

HELLO: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hello"}]
# A configuration change is served everywhere within about a second: the one-second version
# poll (SQLite with memory state has nothing faster), plus the reload. The bound is twice that
# poll and a margin, since these are real processes on a shared machine: it still fails a
# change that waits for a slower poll, a restart, or never arrives; the lags are printed.
PROPAGATION = 2.5
# Bounds a wait for something that takes milliseconds when it works (a broken feature fails
# the test after it instead of hanging it).
LIMIT = 15.0
# Bounds the wait for the first audit rows: a process starts its audit writer (a process of
# its own) when it first writes, which takes seconds on a loaded machine.
AUDIT_LIMIT = 30.0
# How long the audit rows of a process may come after the last one of its requests was
# written (each process writes its rows in order, about once a second).
AUDIT_SETTLE = 2.0


async def _sdk(channel: Channel, key: str) -> openai.AsyncOpenAI:
    """The OpenAI SDK on `channel`'s connection, with `key`, without retries."""
    # The SDK takes an httpx client as it takes its own copy of httpx (its types name only
    # the copy's).
    client = cast("httpx2.AsyncClient", await channel.pinned())
    return openai.AsyncOpenAI(
        base_url=f"{channel.replica.url}/v1", api_key=key, http_client=client, max_retries=0
    )


async def _routed(channel: Channel, model: str, key: str = FILE_KEY) -> tuple[str, dict[str, Any]]:
    """One chat through the SDK on `channel`: the target that served it and its routing
    record."""
    raw = await (await _sdk(channel, key)).chat.completions.with_raw_response.create(
        model=model, messages=HELLO
    )
    channel.check(raw.http_response)
    routing: dict[str, Any] = raw.http_response.json()["routing"]
    return raw.headers["x-turnout-target"], routing


async def _post(
    channel: Channel, model: str, key: str, *, stream: bool = False, **headers: str
) -> httpx.Response:
    """One plain chat request on `channel`, read whole (the answer, whatever its status)."""
    body = {"model": model, "messages": HELLO, "stream": stream}
    return await channel.send(
        "POST", "/v1/chat/completions", json=body,
        headers={"authorization": f"Bearer {key}", **headers},
    )  # fmt: skip


async def _admin(channel: Channel, method: str, path: str, body: object = None) -> Any:
    """One admin API call on `channel` (`path` under `/admin/v1`): its JSON body; fails
    unless it succeeded."""
    options: dict[str, Any] = {"headers": {"authorization": f"Bearer {ADMIN_KEY}"}}
    if body is not None:
        options["json"] = body
    reply = await channel.send(method, f"/admin/v1{path}", **options)
    assert reply.is_success, f"{method} {path}: {reply.status_code} {reply.text}"
    return reply.json() if reply.content else None


async def test_a_breaker_trips_probes_and_recovers_on_the_process_that_tripped_it(
    deployment: Deployment, channels: list[Channel]
) -> None:
    """Two 503s from p1 open its breaker (p2 serves, p1 is skipped as `breaker_open`); after
    the cooldown the first request on that same process probes p1, and p1 serves it and the
    next one."""
    channel = channels[0]
    deployment.upstream.app.faults.script("breaker-p1", ["status=503"] * FAILURE_THRESHOLD)
    loop = asyncio.get_running_loop()
    for _ in range(FAILURE_THRESHOLD):
        target, routing = await _routed(channel, "breaker")
        assert target == "p2", routing
        assert routing["attempts"][0]["status"] == 503, routing
    opened = loop.time()  # the breaker is open from here at the latest
    assert deployment.calls("breaker-p1") == FAILURE_THRESHOLD
    target, routing = await _routed(channel, "breaker")
    assert (target, routing["attempts"][0]["outcome"]) == ("p2", "breaker_open"), routing
    assert deployment.calls("breaker-p1") == FAILURE_THRESHOLD, "p1 was called while open"
    await asyncio.sleep(max(0.0, opened + COOLDOWN + 0.05 - loop.time()))
    probe, routing = await _routed(channel, "breaker")
    assert (probe, routing["target_index"]) == ("p1", 0), _attempts(routing)
    assert deployment.calls("breaker-p1") == FAILURE_THRESHOLD + 1
    after, routing = await _routed(channel, "breaker")
    assert after == "p1", _attempts(routing)


def _attempts(routing: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    """Each attempt entry's target, outcome and reason (for a failure message)."""
    return [(a["target"], a["outcome"], a["reason"]) for a in routing["attempts"]]


async def test_file_and_api_keys_of_two_projects_are_served_on_their_own_routes_only(
    deployment: Deployment, channels: list[Channel]
) -> None:
    """The config file's key is served on its project's route and an API key of a second
    project on that project's route, on every process; neither on the other's route."""
    writer, place = channels[0], f"/projects/{deployment.second}"
    await _admin(writer, "POST", f"{place}/providers", {"name": "m", "kind": "mock"})
    route = {"name": "away", "models": ["away"], "targets": [{"provider": "m", "model": "away-1"}]}
    await _admin(writer, "POST", f"{place}/routes", route)
    api_key = (await _admin(writer, "POST", f"{place}/keys", {"name": "second"}))["key"]
    for channel in channels:
        await _until_answers(channel, "away", api_key, 200)
        home = await _post(channel, "home", FILE_KEY)
        assert (home.status_code, home.json()["model"]) == (200, "home-answer"), home.text
        away = await _post(channel, "away", api_key)
        assert away.json()["model"] == "away-1", away.text
        for model, key in (("away", FILE_KEY), ("home", api_key)):
            refused = await _post(channel, model, key)
            assert refused.status_code == 503, (channel, model, refused.text)
            assert refused.json()["error"]["code"] == "NO_ROUTE", refused.text


async def test_a_route_and_key_made_through_the_api_are_served_and_a_revoked_key_refused_everywhere(
    deployment: Deployment, channels: list[Channel]
) -> None:
    """A route and a key created through one process's admin API are served by every process,
    and the key once revoked is refused (401) by every process, each within about a second."""
    writer, place = channels[0], f"/projects/{deployment.project}"
    name = f"fresh-{uuid.uuid4().hex[:6]}"
    route = {"name": name, "models": [name], "targets": [{"provider": "m", "model": "fresh-1"}]}
    await _admin(writer, "POST", f"{place}/routes", route)
    made = await _admin(writer, "POST", f"{place}/keys", {"name": name})
    lags = await _everywhere(channels, name, made["key"], 200)
    await _admin(writer, "POST", f"{place}/keys/{made['id']}/revoke")
    revoked = await _everywhere(channels, name, made["key"], 401)
    shown = {c.replica.name + str(c.worker): (round(a, 3), round(r, 3)) for c, a, r in
             zip(channels, lags, revoked, strict=True)}  # fmt: skip
    print(f"\n{deployment.shape.id}: served, refused after (s): {shown}")
    assert max(lags) <= PROPAGATION, f"the new key was served after {shown}"
    assert max(revoked) <= PROPAGATION, f"the revoked key was refused after {shown}"


async def _everywhere(channels: list[Channel], model: str, key: str, status: int) -> list[float]:
    """Ask every channel for `model` with `key` until each answers `status`: the seconds
    each took, from now."""
    start = time.perf_counter()

    async def answers(channel: Channel) -> float:
        return await _until_answers(channel, model, key, status) - start

    return list(await asyncio.gather(*(answers(channel) for channel in channels)))


async def _until_answers(channel: Channel, model: str, key: str, status: int) -> float:
    """Poll `channel` until `key` gets `status` for `model` (200: it is served), then send it
    one chat that must get the same: when the poll got it (`time.perf_counter()`). The poll
    reads `GET /v1/models/{model}`, which answers 401 for an unknown key and 200 once the
    key may use the model: a refused chat request closes its connection (its body is never
    read), the poll must not."""
    path, headers = f"/v1/models/{model}", {"authorization": f"Bearer {key}"}

    async def answered() -> bool:
        return (await channel.send("GET", path, headers=headers)).status_code == status

    await until(answered, LIMIT, f"{channel!r} answering {status} for {model}", every=0.01)
    seen = time.perf_counter()
    chat = await _post(channel, model, key)
    assert chat.status_code == status, (channel, chat.text)
    return seen


async def test_a_stream_whose_first_target_fails_before_its_first_token_is_served_by_the_next(
    deployment: Deployment, channels: list[Channel]
) -> None:
    """On every process, p1's stream fails before its first token (an error event) and the
    caller's stream is served by p2 from its start, with no error."""
    for number, channel in enumerate(channels, start=1):
        deployment.upstream.app.faults.script("stream-p1", ["error_event"])
        raw = await (await _sdk(channel, FILE_KEY)).chat.completions.with_raw_response.create(
            model="stream", messages=HELLO, stream=True
        )
        channel.check(raw.http_response)
        text = "".join([c.choices[0].delta.content or "" async for c in raw.parse() if c.choices])
        assert raw.headers["x-turnout-target"] == "p2", channel
        assert text, channel
        assert deployment.calls("stream-p1") == number, "p1 was not called first"


async def test_every_request_through_every_process_leaves_one_audit_row(
    deployment: Deployment, channels: list[Channel]
) -> None:
    """Through each process an answered request, a failover, a stream and a request refused
    for its key: the store holds exactly one audit row for each, and the failover's row has
    its two attempts."""
    prefix = f"shape-{uuid.uuid4().hex[:8]}-"
    kinds = (  # a process writes its rows in order: the refused one first
        ("refused", "shapes-unknown-key-0123456789", False, 401),
        ("failover", AUDIT_KEY, False, 200),
        ("answered", AUDIT_KEY, False, 200),
        ("streamed", AUDIT_KEY, True, 200),
    )
    sent: dict[str, int] = {}
    for number, channel in enumerate(channels):
        deployment.upstream.app.faults.script("audit-p1", ["status=503"])  # the failover's
        for kind, key, stream, status in kinds:
            request_id = f"{prefix}{kind}-{number}"
            headers = {"x-request-id": request_id}
            reply = await _post(channel, "audit", key, stream=stream, **headers)
            assert reply.status_code == status, reply.text
            assert reply.headers["x-request-id"] == request_id
            sent[request_id] = status
    assert deployment.calls("audit-p1") == 3 * len(channels)

    def rows() -> list[tuple[Any, ...]]:
        return deployment.query(
            "SELECT request_id, status FROM request_audit"
            " WHERE request_id LIKE :prefix OR key_name = 'audit'",
            prefix=f"{prefix}%",
        )

    found = await _written(rows, len(sent), sum(status == 200 for status in sent.values()))
    assert sorted(found) == sorted(sent.items())
    for number in range(len(channels)):
        attempts = deployment.query(
            "SELECT count(*) FROM request_attempts WHERE request_id = :id",
            id=f"{prefix}failover-{number}",
        )
        assert attempts == [(2,)]


async def _written(
    rows: Callable[[], list[tuple[Any, ...]]], count: int, answered: int
) -> list[tuple[Any, ...]]:
    """`rows()` once it holds `count` rows; or once it held `answered` rows with status 200
    for `AUDIT_SETTLE` seconds (the others came first, so they were not written); or after
    `AUDIT_LIMIT` seconds."""
    loop = asyncio.get_running_loop()
    start, settled = loop.time(), None
    while True:
        found = await asyncio.to_thread(rows)
        now = loop.time()
        if len(found) >= count or now - start > AUDIT_LIMIT:
            return found
        if settled is None and sum(status == 200 for _, status in found) >= answered:
            settled = now
        if settled is not None and now - settled > AUDIT_SETTLE:
            return found
        await asyncio.sleep(0.1)
