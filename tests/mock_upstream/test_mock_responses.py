"""The mock upstream's Responses endpoint over real sockets: answers, streams, faults, and the
responses it keeps for retrieval."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import aiohttp
import orjson
import pytest

from turnout.mock_upstream import MockUpstream
from turnout.wire import openai_responses
from turnout.wire.sse import SSEDecoder

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


@pytest.fixture
async def upstream() -> AsyncIterator[MockUpstream]:
    async with MockUpstream(hold_limit=5.0) as server:
        yield server


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def call(
    http: aiohttp.ClientSession, url: str, body: dict[str, Any] | None = None, method: str = "POST"
) -> tuple[int, bytes]:
    data = orjson.dumps(body) if body is not None else None
    async with http.request(method, url, data=data) as response:
        return response.status, await response.read()


def events(data: bytes) -> list[dict[str, Any]]:
    decoder = SSEDecoder()
    return [orjson.loads(e.data) for e in decoder.feed(data) + decoder.flush()]


async def test_a_whole_response_is_kept_retrieved_and_deleted(
    upstream: MockUpstream, http: aiohttp.ClientSession
) -> None:
    """A whole answer reads `mock answer from <model>`; the mock keeps it for `GET` until a
    `DELETE`, then 404 in OpenAI's envelope."""
    url = f"{upstream.openai_base_url}/responses"
    status, body = await call(http, url, {"model": "gpt-5-mini", "input": "hello"})
    answer = orjson.loads(body)
    assert status == 200
    assert openai_responses.decode_response(body).text == "mock answer from gpt-5-mini"
    kept = f"{url}/{answer['id']}"
    assert orjson.loads((await call(http, kept, method="GET"))[1])["id"] == answer["id"]
    deleted = orjson.loads((await call(http, kept, method="DELETE"))[1])
    assert deleted == {"id": answer["id"], "object": "response.deleted", "deleted": True}
    status, body = await call(http, kept, method="GET")
    assert status == 404
    assert "not found" in orjson.loads(body)["error"]["message"]


async def test_store_false_is_not_kept(upstream: MockUpstream, http: aiohttp.ClientSession) -> None:
    """A request with `store: false` is answered but not kept."""
    url = f"{upstream.openai_base_url}/responses"
    _, body = await call(http, url, {"model": "m", "input": "x", "store": False})
    status, _ = await call(http, f"{url}/{orjson.loads(body)['id']}", method="GET")
    assert status == 404


async def test_stream_is_numbered_and_decodes(
    upstream: MockUpstream, http: aiohttp.ClientSession
) -> None:
    """A streamed answer is the numbered event sequence, ending with `response.completed`."""
    url = f"{upstream.openai_base_url}/responses"
    _, data = await call(http, url, {"model": "gpt-5-mini", "input": "hi", "stream": True})
    sent = events(data)
    assert [e["sequence_number"] for e in sent] == list(range(len(sent)))
    assert sent[0]["type"] == "response.created"
    assert sent[-1]["type"] == "response.completed"
    text = "".join(e["delta"] for e in sent if e["type"] == "response.output_text.delta")
    assert text == "mock answer from gpt-5-mini"


@pytest.mark.parametrize(
    ("fault", "expect"),
    [
        ("status=429;retry_after=3", 429),
        ("refuse", "incomplete"),
        ("tool_call", "function_call"),
    ],
)
async def test_faults_apply_to_responses(
    upstream: MockUpstream, http: aiohttp.ClientSession, fault: str, expect: Any
) -> None:
    """The chat endpoint's faults play on the Responses endpoint too: an error status, a
    refusal (incomplete, content_filter) and a forced tool call from the offered tools."""
    tools = [{"type": "function", "name": "f", "parameters": {"type": "object"}}]
    body = {"model": f"gpt-5-mini/fault:{fault}", "input": "hi", "tools": tools}
    status, data = await call(http, f"{upstream.openai_base_url}/responses", body)
    if isinstance(expect, int):
        assert status == expect
        return
    answer = orjson.loads(data)
    kinds = [item["type"] for item in answer["output"]] + [answer["status"]]
    assert expect in kinds


async def test_stream_faults_cut_and_drop_the_terminator(
    upstream: MockUpstream, http: aiohttp.ClientSession
) -> None:
    """A stream without its terminator ends before `response.completed`; a malformed event
    is one the decoder skips."""
    url = f"{upstream.openai_base_url}/responses"
    body = {"model": "gpt-5-mini/fault:no_done;malformed=1", "input": "hi", "stream": True}
    _, data = await call(http, url, body)
    decoder = openai_responses.StreamDecoder()
    sse = SSEDecoder()
    chunks = [c for e in sse.feed(data) + sse.flush() for c in decoder.feed(e)]
    assert decoder.malformed == 1
    assert not decoder.done
    assert "".join(c.delta for c in chunks) == "mock answer from gpt-5-mini"
