"""The mock upstream over real sockets: endpoints, every fault, the request log, control."""

from __future__ import annotations

import asyncio
import email.utils
import socket
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any

import aiohttp
import orjson
import pytest

from turnout.mock_upstream import MockUpstream, ThreadedMockUpstream

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


@pytest.fixture
async def upstream() -> AsyncIterator[MockUpstream]:
    """A mock upstream on a free 127.0.0.1 port, with short holds."""
    async with MockUpstream(hold_limit=5.0) as server:
        yield server


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    """A plain HTTP client."""
    async with aiohttp.ClientSession() as session:
        yield session


CHAT = {
    "model": "gpt-4o-mini",
    "messages": [{"role": "user", "content": "Why is checkout failing?"}],
}


async def call(
    http: aiohttp.ClientSession,
    url: str,
    body: dict[str, Any] | None = None,
    *,
    headers: dict[str, str] | None = None,
    method: str = "POST",
) -> tuple[int, dict[str, str], bytes]:
    """One request; status, lower-cased headers, body."""
    data = orjson.dumps(body) if body is not None else None
    async with http.request(method, url, data=data, headers=headers) as response:
        payload = await response.read()
        return response.status, {k.lower(): v for k, v in response.headers.items()}, payload


async def raw_exchange(
    port: int, body: dict[str, Any], path: str = "/v1/chat/completions"
) -> bytes:
    """Send one request on a raw socket and read until the server closes (or resets)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    payload = orjson.dumps(body)
    writer.write(
        f"POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        f"content-length: {len(payload)}\r\nconnection: close\r\n\r\n".encode()
        + payload
    )
    await writer.drain()
    try:
        return await asyncio.wait_for(reader.read(), 5)
    finally:
        writer.close()


def sse_data(payload: bytes) -> list[str]:
    """The `data:` lines of an SSE body."""
    return [line[6:] for line in payload.decode().split("\n") if line.startswith("data: ")]


def sse_events(payload: bytes) -> list[str]:
    """The `event:` names of an SSE body."""
    return [line[7:] for line in payload.decode().split("\n") if line.startswith("event: ")]


async def test_chat_completion_answers_like_openai(upstream: MockUpstream, http: Any) -> None:
    """A chat completion echoes the model, has usage, an id and an x-request-id header."""
    status, headers, body = await call(http, f"{upstream.url}/v1/chat/completions", CHAT)
    answer = orjson.loads(body)
    assert status == 200
    assert answer["object"] == "chat.completion"
    assert answer["choices"][0]["message"]["content"] == "mock answer from gpt-4o-mini"
    assert answer["choices"][0]["finish_reason"] == "stop"
    assert answer["usage"]["prompt_tokens"] == len("Why is checkout failing?") // 4
    assert answer["usage"]["completion_tokens"] == 4
    assert headers["x-request-id"].startswith("req_")


async def test_openai_stream_sequence(upstream: MockUpstream, http: Any) -> None:
    """A stream sends a role chunk, one chunk per word, finish, usage (when asked), [DONE]."""
    body = {**CHAT, "stream": True, "stream_options": {"include_usage": True}}
    status, headers, payload = await call(http, f"{upstream.url}/v1/chat/completions", body)
    data = sse_data(payload)
    chunks = [orjson.loads(d) for d in data[:-1]]
    assert status == 200
    assert headers["content-type"] == "text/event-stream"
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    words = [c["choices"][0]["delta"]["content"] for c in chunks[1:5]]
    assert "".join(words) == "mock answer from gpt-4o-mini"
    assert chunks[5]["choices"][0]["finish_reason"] == "stop"
    assert chunks[6]["usage"]["completion_tokens"] == 4
    assert data[-1] == "[DONE]"


async def test_openai_stream_without_usage_option(upstream: MockUpstream, http: Any) -> None:
    """Without stream_options.include_usage there is no usage chunk."""
    _, _, payload = await call(
        http, f"{upstream.url}/v1/chat/completions", {**CHAT, "stream": True}
    )
    assert not any("usage" in d for d in sse_data(payload))


async def test_anthropic_message_and_stream(upstream: MockUpstream, http: Any) -> None:
    """Messages answers a message, and streams the Anthropic event sequence with a ping."""
    body = {"model": "claude-x", "max_tokens": 10, "messages": CHAT["messages"]}
    status, headers, payload = await call(http, f"{upstream.url}/v1/messages", body)
    message = orjson.loads(payload)
    assert status == 200
    assert message["type"] == "message"
    assert message["content"][0]["text"] == "mock answer from claude-x"
    assert message["stop_reason"] == "end_turn"
    assert headers["request-id"] == headers["x-request-id"]
    _, _, payload = await call(http, f"{upstream.url}/v1/messages", {**body, "stream": True})
    assert sse_events(payload) == [
        "message_start",
        "content_block_start",
        "ping",
        *["content_block_delta"] * 4,
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]


async def test_embeddings_models_and_count_tokens(upstream: MockUpstream, http: Any) -> None:
    """Embeddings are deterministic per input; models list; count_tokens counts the prompt."""
    url = f"{upstream.url}/v1/embeddings"
    _, _, first = await call(http, url, {"model": "e", "input": ["a", "b"], "dimensions": 4})
    _, _, again = await call(http, url, {"model": "e", "input": "a", "dimensions": 4})
    vectors = orjson.loads(first)["data"]
    assert [len(v["embedding"]) for v in vectors] == [4, 4]
    assert orjson.loads(again)["data"][0]["embedding"] == vectors[0]["embedding"]
    _, _, b64 = await call(http, url, {"model": "e", "input": "a", "encoding_format": "base64"})
    assert isinstance(orjson.loads(b64)["data"][0]["embedding"], str)
    _, _, models = await call(http, f"{upstream.url}/v1/models", method="GET")
    assert "gpt-4o-mini" in [m["id"] for m in orjson.loads(models)["data"]]
    body = {"model": "claude-x", "messages": [{"role": "user", "content": "x" * 40}]}
    _, _, count = await call(http, f"{upstream.url}/v1/messages/count_tokens", body)
    assert orjson.loads(count) == {"input_tokens": 10}


async def test_azure_deployment_paths(upstream: MockUpstream, http: Any) -> None:
    """Azure deployment URLs map to the chat handler; the deployment is the model."""
    url = f"{upstream.url}/openai/deployments/dep-1/chat/completions?api-version=2024-10-21"
    status, _, body = await call(
        http, url, {"messages": CHAT["messages"]}, headers={"api-key": "k"}
    )
    assert status == 200
    assert orjson.loads(body)["model"] == "dep-1"
    entry = upstream.app.log.entries()[-1]
    assert entry.query == "api-version=2024-10-21"
    assert entry.credential == "k"


async def test_unknown_path_and_bad_json(upstream: MockUpstream, http: Any) -> None:
    """An unknown path is a 404; a body that is not JSON is a logged 400."""
    status, _, _ = await call(http, f"{upstream.url}/v2/nothing", CHAT)
    assert status == 404
    async with http.post(f"{upstream.url}/v1/chat/completions", data=b"{nope") as response:
        assert response.status == 400
        assert "JSON" in (await response.json())["error"]["message"]
    assert upstream.app.log.entries()[-1].status == 400


async def test_bad_fault_spec_is_a_400_naming_the_item(upstream: MockUpstream, http: Any) -> None:
    """A model whose fault spec does not parse is answered 400 with the bad item named."""
    body = {**CHAT, "model": "m/fault:status=429;bogus"}
    status, _, payload = await call(http, f"{upstream.url}/v1/chat/completions", body)
    assert status == 400
    assert "bogus" in orjson.loads(payload)["error"]["message"]


async def test_status_with_each_retry_after_form(upstream: MockUpstream, http: Any) -> None:
    """Retry-After as seconds, as an HTTP date, and retry-after-ms."""
    url = f"{upstream.url}/v1/chat/completions"
    status, headers, _ = await call(http, url, {**CHAT, "model": "mock-429-retry-8"})
    assert (status, headers["retry-after"]) == (429, "8")
    _, headers, _ = await call(
        http, url, {**CHAT, "model": "m/fault:status=503;retry_after_date=30"}
    )
    when = email.utils.parsedate_to_datetime(headers["retry-after"]).timestamp()
    assert 25 <= when - time.time() <= 31
    _, headers, _ = await call(
        http, url, {**CHAT, "model": "m/fault:status=429;retry_after_ms=1500"}
    )
    assert headers["retry-after-ms"] == "1500"


async def test_header_fault_wins_over_the_model(upstream: MockUpstream, http: Any) -> None:
    """`x-mock-fault` replaces the model name's spec."""
    body = {**CHAT, "model": "mock-429"}
    status, _, _ = await call(
        http, f"{upstream.url}/v1/chat/completions", body, headers={"x-mock-fault": "status=503"}
    )
    assert status == 503


async def test_fail_twice_then_answer(upstream: MockUpstream, http: Any) -> None:
    """A POSTed script plays its steps in order, then the model answers normally."""
    script = {"model": "gpt-4o-mini", "faults": ["status=429;retry_after=1", "status=503"]}
    status, _, queued = await call(http, f"{upstream.url}/_mock/scripts", script)
    assert (status, orjson.loads(queued)["queued"]) == (200, 2)
    url = f"{upstream.url}/v1/chat/completions"
    statuses = [(await call(http, url, CHAT))[0] for _ in range(3)]
    assert statuses == [429, 503, 200]
    status, _, _ = await call(http, f"{upstream.url}/_mock/scripts", {"model": 1, "faults": []})
    assert status == 400


async def test_model_name_sequence(upstream: MockUpstream, http: Any) -> None:
    """A sequence in the model name advances per request carrying it."""
    body = {**CHAT, "model": "m/fault:status=500|status=502|ok"}
    url = f"{upstream.url}/v1/chat/completions"
    assert [(await call(http, url, body))[0] for _ in range(4)] == [500, 502, 200, 200]


@pytest.mark.parametrize(
    ("vendor", "status", "words"),
    [
        ("openai", 429, "insufficient_quota"),
        ("anthropic", 400, "credit balance is too low"),
        ("deepseek", 402, "Insufficient Balance"),
        ("kimi", 429, "exceeded_current_quota_error"),
        ("zai", 429, "1113"),
        ("xai", 429, "used all available credits"),
    ],
)
async def test_quota_signal_per_vendor(
    upstream: MockUpstream, http: Any, vendor: str, status: int, words: str
) -> None:
    """`quota;vendor=V` answers that vendor's quota or credit signal."""
    body = {**CHAT, "model": f"m/fault:quota;vendor={vendor}"}
    got, _, payload = await call(http, f"{upstream.url}/v1/chat/completions", body)
    assert got == status
    assert words in payload.decode()


async def test_zai_reset_time_in_the_message(upstream: MockUpstream, http: Any) -> None:
    """Z.ai's usage-limit signal names the reset time (code 1308)."""
    body = {**CHAT, "model": "m/fault:quota;vendor=zai;reset_in=3600"}
    _, _, payload = await call(http, f"{upstream.url}/v1/chat/completions", body)
    error = orjson.loads(payload)["error"]
    assert error["code"] == "1308"
    assert "Your limit will reset at" in error["message"]


async def test_context_length_and_content_policy(upstream: MockUpstream, http: Any) -> None:
    """Context-length and content-policy faults are 400s naming their reason, per endpoint."""
    url = f"{upstream.url}/v1/chat/completions"
    _, _, ctx = await call(http, url, {**CHAT, "model": "mock-ctx"})
    assert orjson.loads(ctx)["error"]["code"] == "context_length_exceeded"
    _, _, policy = await call(http, url, {**CHAT, "model": "mock-policy"})
    assert orjson.loads(policy)["error"]["code"] == "content_policy_violation"
    body = {"model": "mock-ctx", "max_tokens": 5, "messages": CHAT["messages"]}
    status, _, ant = await call(http, f"{upstream.url}/v1/messages", body)
    assert status == 400
    assert "prompt is too long" in orjson.loads(ant)["error"]["message"]


async def test_refusal_is_a_200(upstream: MockUpstream, http: Any) -> None:
    """`refuse` answers 200 with content_filter / refusal."""
    url = f"{upstream.url}/v1/chat/completions"
    _, _, openai = await call(http, url, {**CHAT, "model": "mock-refuse"})
    assert orjson.loads(openai)["choices"][0]["finish_reason"] == "content_filter"
    body = {"model": "mock-refuse", "max_tokens": 5, "messages": CHAT["messages"]}
    _, _, anthropic = await call(http, f"{upstream.url}/v1/messages", body)
    assert orjson.loads(anthropic)["stop_reason"] == "refusal"


async def test_latency_delays_the_answer(upstream: MockUpstream, http: Any) -> None:
    """`latency=S` waits S seconds before the headers."""
    started = time.monotonic()
    await call(
        http, f"{upstream.url}/v1/chat/completions", {**CHAT, "model": "m/fault:latency=0.2"}
    )
    assert time.monotonic() - started >= 0.2


async def test_reset_before_headers(upstream: MockUpstream) -> None:
    """`reset` resets the connection before any response byte."""
    with pytest.raises(ConnectionResetError):
        await raw_exchange(upstream.port, {**CHAT, "model": "mock-reset"})


async def test_hang_ends_when_the_client_leaves(upstream: MockUpstream, http: Any) -> None:
    """A hung request holds until the client gives up; the server keeps serving."""
    with pytest.raises(asyncio.TimeoutError):
        async with asyncio.timeout(0.2):
            await call(http, f"{upstream.url}/v1/chat/completions", {**CHAT, "model": "mock-hang"})
    status, _, _ = await call(http, f"{upstream.url}/v1/chat/completions", CHAT)
    assert status == 200
    assert upstream.app.log.entries()[0].status is None


async def test_cut_stream_after_n_chunks(upstream: MockUpstream) -> None:
    """`cut=N` drops the connection after N content chunks: no terminator, no finish."""
    body = {**CHAT, "model": "m/fault:cut=2", "stream": True}
    data = await raw_exchange(upstream.port, body)
    assert data.count(b'"content":"') == 3  # the role chunk and two words
    assert b'finish_reason":"stop' not in data
    assert not data.endswith(b"0\r\n\r\n")


async def test_cut_whole_answer_sends_half_the_body(upstream: MockUpstream) -> None:
    """`cut` on a non-stream sends the full content-length and half the body."""
    data = await raw_exchange(upstream.port, {**CHAT, "model": "m/fault:cut=0"})
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(next(h for h in head.split(b"\r\n") if h.startswith(b"content-length"))[16:])
    assert 0 < len(body) < length


async def test_stall_goes_silent_with_the_connection_open(
    upstream: MockUpstream, http: Any
) -> None:
    """`stall=N` sends N content chunks, then nothing, until the client leaves."""
    body = {**CHAT, "model": "m/fault:stall=1", "stream": True}
    received: list[bytes] = []

    async def read_all(resp: aiohttp.ClientResponse) -> None:
        async with asyncio.timeout(0.3):
            async for line in resp.content:
                received.append(line)  # noqa: PERF401 - kept line by line until the timeout

    async with http.post(f"{upstream.url}/v1/chat/completions", data=orjson.dumps(body)) as resp:
        with pytest.raises(TimeoutError):
            await read_all(resp)
    assert sum(b'"content":"mock"' in line for line in received) == 1
    assert not any(b"[DONE]" in line for line in received)


async def test_malformed_no_done_error_event_end(upstream: MockUpstream, http: Any) -> None:
    """Malformed chunk, missing [DONE], in-stream error event, and a clean early end."""
    url = f"{upstream.url}/v1/chat/completions"
    _, _, payload = await call(
        http, url, {**CHAT, "model": "m/fault:malformed=2;no_done", "stream": True}
    )
    data = sse_data(payload)
    assert sum(d.startswith('{"id": "chatcmpl-broken"') for d in data) == 1
    assert data[-1] != "[DONE]"
    assert '"finish_reason":"stop"' in data[-1]
    _, _, payload = await call(http, url, {**CHAT, "model": "mock-errorevent", "stream": True})
    assert "server_error" in sse_data(payload)[-1]
    _, _, payload = await call(http, url, {**CHAT, "model": "m/fault:end=1", "stream": True})
    assert not any('finish_reason":"stop' in d for d in sse_data(payload))


async def test_first_token_delay_after_the_role_chunk(upstream: MockUpstream, http: Any) -> None:
    """`first_token=S`: headers and the role chunk at once, the first word S seconds later."""
    body = {**CHAT, "model": "m/fault:first_token=0.3", "stream": True}
    started = time.monotonic()
    async with http.post(f"{upstream.url}/v1/chat/completions", data=orjson.dumps(body)) as resp:
        first = await resp.content.readline()
        role_at = time.monotonic() - started
        async for line in resp.content:
            if b'"content":"mock"' in line:
                break
        word_at = time.monotonic() - started
    assert b'"role":"assistant"' in first
    assert role_at < 0.25
    assert word_at >= 0.3


async def test_stamp_puts_each_chunks_send_time_in_its_text(
    upstream: MockUpstream, http: Any
) -> None:
    """`stamp`: each content chunk's text is the microsecond Unix time it left, so the
    chunks of `chunk_delay=0.05` are about 50 ms apart and within the request's time."""
    body = {**CHAT, "model": "m/fault:stamp;chunks=3;chunk_delay=0.05", "stream": True}
    before = time.time_ns() // 1000
    _, _, payload = await call(http, f"{upstream.url}/v1/chat/completions", body)
    after = time.time_ns() // 1000
    texts = [
        orjson.loads(data)["choices"][0]["delta"].get("content")
        for data in sse_data(payload)
        if data != "[DONE]"
    ]
    stamps = [int(text) for text in texts if text and text.strip()]
    assert len(stamps) == 3
    assert before <= stamps[0] < stamps[1] < stamps[2] <= after
    assert stamps[2] - stamps[0] >= 100_000


async def test_stamp_in_anthropic_stream(upstream: MockUpstream, http: Any) -> None:
    """`stamp` also stamps the text deltas of a Messages stream."""
    body = {**CHAT, "model": "m/fault:stamp;chunks=2", "stream": True, "max_tokens": 8}
    _, _, payload = await call(http, f"{upstream.url}/v1/messages", body)
    deltas = [
        orjson.loads(data)["delta"]["text"] for data in sse_data(payload) if '"text_delta"' in data
    ]
    assert [text.strip().isdigit() for text in deltas] == [True, True]


@pytest.mark.parametrize(
    ("spec", "status", "content_type"),
    [
        ("body=garbage", 200, "application/json"),
        ("body=truncated", 200, "application/json"),
        ("body=nonutf8", 200, "application/json"),
        ("body=html", 502, "text/html"),
        ("body=empty", 200, "application/json"),
        ("body=wrong_type", 200, "text/html; charset=utf-8"),
    ],
)
async def test_bad_bodies(
    upstream: MockUpstream, http: Any, spec: str, status: int, content_type: str
) -> None:
    """`body=KIND` sends bad bytes with the expected status and content type."""
    got, headers, payload = await call(
        http, f"{upstream.url}/v1/chat/completions", {**CHAT, "model": f"m/fault:{spec}"}
    )
    assert (got, headers["content-type"]) == (status, content_type)
    if spec != "body=wrong_type":
        with pytest.raises(orjson.JSONDecodeError):
            orjson.loads(payload)


async def test_request_log_records_credentials_and_faults(
    upstream: MockUpstream, http: Any
) -> None:
    """The log keeps model, fault, credential (per header), headers of interest and status."""
    url = f"{upstream.url}/v1/chat/completions"
    await call(http, url, CHAT, headers={"authorization": "Bearer sk-one"})
    await call(
        http,
        f"{upstream.url}/v1/messages",
        {"model": "mock-429", "messages": [], "max_tokens": 1},
        headers={"x-api-key": "ant-two", "anthropic-version": "2023-06-01"},
    )
    status, _, payload = await call(http, f"{upstream.url}/_mock/requests", method="GET")
    log = orjson.loads(payload)
    assert status == 200
    assert [e["credential"] for e in log] == ["sk-one", "ant-two"]
    assert log[0]["credentials"] == {"authorization": "Bearer sk-one"}
    assert log[1]["headers"]["anthropic-version"] == "2023-06-01"
    assert (log[1]["model"], log[1]["fault"], log[1]["status"]) == ("mock-429", "status=429", 429)
    assert log[1]["fault_items"] == {"status": 429}
    assert log[0]["body"]["messages"] == CHAT["messages"]
    _, _, only = await call(http, f"{upstream.url}/_mock/requests?model=mock-429", method="GET")
    assert len(orjson.loads(only)) == 1
    _, _, cleared = await call(http, f"{upstream.url}/_mock/requests", method="DELETE")
    assert orjson.loads(cleared) == {"cleared": 2}
    _, _, empty = await call(http, f"{upstream.url}/_mock/requests", method="GET")
    assert orjson.loads(empty) == []


async def test_health_reset_and_unknown_control(upstream: MockUpstream, http: Any) -> None:
    """/_mock/health answers; /_mock/reset clears log and scripts; unknown control is 404."""
    await call(http, f"{upstream.url}/_mock/scripts", {"model": "m", "faults": ["hang"]})
    _, _, pending = await call(http, f"{upstream.url}/_mock/scripts", method="GET")
    assert orjson.loads(pending) == {"m": ["hang"]}
    _, _, health = await call(http, f"{upstream.url}/_mock/health", method="GET")
    assert orjson.loads(health)["status"] == "ok"
    await call(http, f"{upstream.url}/_mock/reset", {})
    _, _, pending = await call(http, f"{upstream.url}/_mock/scripts", method="GET")
    assert orjson.loads(pending) == {}
    status, _, _ = await call(http, f"{upstream.url}/_mock/nothing", method="GET")
    assert status == 404


async def test_keep_alive_serves_many_requests_on_one_connection(upstream: MockUpstream) -> None:
    """Several requests on one keep-alive connection are all answered, in order."""
    connector = aiohttp.TCPConnector(limit=1)
    async with aiohttp.ClientSession(connector=connector) as session:
        for _ in range(5):
            status, _, _ = await call(session, f"{upstream.url}/v1/chat/completions", CHAT)
            assert status == 200
    assert len(upstream.app.log) == 5


async def test_garbage_request_line_is_a_400(upstream: MockUpstream) -> None:
    """Bytes that are not HTTP get a 400 and a closed connection, and the server lives on."""
    reader, writer = await asyncio.open_connection("127.0.0.1", upstream.port)
    writer.write(b"\x00\x01 not http at all\r\n\r\n")
    data = await asyncio.wait_for(reader.read(), 5)
    writer.close()
    assert data.startswith(b"HTTP/1.1 400")


def test_threaded_upstream_serves_sync_code() -> None:
    """ThreadedMockUpstream runs on its own loop; its log and scripts are reachable safely."""
    with ThreadedMockUpstream() as upstream:
        upstream.script("m", ["status=503"])

        async def go() -> list[int]:
            async with aiohttp.ClientSession() as session:
                url = f"{upstream.openai_base_url}/chat/completions"
                body = {**CHAT, "model": "m"}
                return [(await call(session, url, body))[0] for _ in range(2)]

        assert asyncio.run(go()) == [503, 200]
        assert [e["status"] for e in upstream.requests()] == [503, 200]
        upstream.reset()
        assert upstream.requests() == []


def test_threaded_upstream_start_raises_what_stopped_it() -> None:
    """A threaded upstream that cannot listen raises the bind error from `start()`, and a stop
    after that does nothing."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        upstream = ThreadedMockUpstream(port=taken.getsockname()[1])
        with pytest.raises(OSError, match=r"(?i)address already in use"):
            upstream.start()
    upstream.stop()


def test_command_line_serves_until_terminated() -> None:
    """`python -m turnout.mock_upstream --port 0` prints its URL and answers there."""
    command = [sys.executable, "-m", "turnout.mock_upstream", "--port", "0"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as process:  # noqa: S603
        try:
            assert process.stdout is not None
            url = process.stdout.readline().rsplit(" ", 1)[1].strip()

            async def health() -> dict[str, Any]:
                async with (
                    aiohttp.ClientSession() as session,
                    session.get(f"{url}/_mock/health") as r,
                ):
                    return dict(await r.json())

            assert asyncio.run(health())["status"] == "ok"
        finally:
            process.terminate()
        assert process.wait(10) == 0


def test_turnout_command_has_mock_upstream() -> None:
    """`turnout mock-upstream --port P` is a subcommand of the turnout command line."""
    from turnout.cli import build_parser

    args = build_parser().parse_args(["mock-upstream", "--port", "0"])
    assert (args.command, args.host, args.port) == ("mock-upstream", "127.0.0.1", 0)


@pytest.mark.parametrize(
    "argv",
    [["turnout", "mock-upstream", "--help"], ["python -m turnout.mock_upstream", "--help"]],
)
def test_help_ends_with_the_fault_grammar(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--help` of both entry points exits 0 with the fault items and examples, in 100 columns."""
    from turnout.cli import main as turnout_main
    from turnout.mock_upstream.server import main as module_main

    monkeypatch.setenv("COLUMNS", "100")
    entry = turnout_main if argv[0] == "turnout" else module_main
    with pytest.raises(SystemExit) as exited:
        entry(argv[1:])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    for words in (
        "--hold-limit",
        "--gemini-key",
        'spec = step *( "|" step )',
        "status=N",
        "retry_after=S",
        "first_token=S",
        "cut=N",
        "malformed[=N]",
        "body=KIND",
        "tool_call[=NAME]",
        "gpt-4o-mini/fault:status=429;retry_after=8",
        "mock-429-retry-8",
        "x-mock-fault",
        "POST /_mock/scripts",
    ):
        assert words in out
    assert max(len(line) for line in out.splitlines()) <= 100


async def test_gemini_face_checks_its_test_key_and_answers_in_googles_shape(
    http: aiohttp.ClientSession,
) -> None:
    """With a test key set, a Gemini call without it is refused in Google's envelope before any
    fault plays (and logged); with it, a quota fault is Google's 429 with quota details."""
    body = {"contents": [{"parts": [{"text": "hi"}]}]}
    async with MockUpstream(gemini_key="the-key") as server:
        url = f"{server.url}/v1beta/models/m%2Ffault%3Aquota:generateContent"
        async with http.post(url, json=body, headers={"x-goog-api-key": "wrong"}) as refused:
            refused_status, refused_body = refused.status, await refused.json()
        async with http.post(url, json=body, headers={"x-goog-api-key": "the-key"}) as quota:
            quota_status, quota_body = quota.status, await quota.json()
        logged = [entry.model for entry in server.app.log.entries()]
    assert refused_status == 400
    assert refused_body["error"]["details"][0]["reason"] == "API_KEY_INVALID"
    assert quota_status == 429
    error = quota_body["error"]
    assert error["status"] == "RESOURCE_EXHAUSTED"
    kinds = [d["@type"].rsplit(".", 1)[-1] for d in error["details"]]
    assert kinds == ["QuotaFailure", "RetryInfo"]
    assert logged == ["m/fault:quota"] * 2
