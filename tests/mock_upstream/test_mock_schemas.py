"""The mock upstream honours a JSON schema on chat and on Anthropic Messages, whole and
streamed: the answer is JSON that validates against the schema the request carried."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import aiohttp
import orjson
import pytest
from pydantic import BaseModel

from turnout.mock_upstream import MockUpstream

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


class Verdict(BaseModel):
    """The shape asked for."""

    service: str
    healthy: bool
    incidents: list[str]
    latency_ms: int


SCHEMA = {**Verdict.model_json_schema(), "additionalProperties": False}
MESSAGES = [{"role": "user", "content": "Is checkout healthy?"}]


@pytest.fixture
async def upstream() -> AsyncIterator[MockUpstream]:
    """A mock upstream on a free 127.0.0.1 port."""
    async with MockUpstream(hold_limit=5.0) as server:
        yield server


async def post(url: str, body: dict[str, Any]) -> bytes:
    """One POST; the body of a 200 answer."""
    async with aiohttp.ClientSession() as http, http.post(url, data=orjson.dumps(body)) as reply:
        assert reply.status == 200
        return await reply.read()


def streamed_text(payload: bytes, pick: str) -> str:
    """The text deltas of an SSE stream (`pick`: `openai` or `anthropic`)."""
    text = ""
    for line in payload.decode().splitlines():
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        event = orjson.loads(line[6:])
        if pick == "openai":
            for choice in event.get("choices", []):
                text += choice["delta"].get("content") or ""
        elif event.get("type") == "content_block_delta":
            text += event["delta"].get("text", "")
    return text


async def test_chat_json_schema_answer_validates(upstream: MockUpstream) -> None:
    """A chat `response_format` json_schema gets JSON that validates, whole and streamed."""
    fmt = {"type": "json_schema", "json_schema": {"name": "verdict", "schema": SCHEMA}}
    body = {"model": "gpt-4o-mini", "messages": MESSAGES, "response_format": fmt}
    whole = orjson.loads(await post(f"{upstream.url}/v1/chat/completions", body))
    Verdict.model_validate_json(whole["choices"][0]["message"]["content"])
    payload = await post(f"{upstream.url}/v1/chat/completions", {**body, "stream": True})
    Verdict.model_validate_json(streamed_text(payload, "openai"))


async def test_anthropic_output_config_answer_validates(upstream: MockUpstream) -> None:
    """An Anthropic `output_config.format` gets JSON that validates, whole and streamed."""
    config = {"format": {"type": "json_schema", "schema": SCHEMA}}
    body = {"model": "claude-x", "max_tokens": 100, "messages": MESSAGES, "output_config": config}
    whole = orjson.loads(await post(f"{upstream.url}/v1/messages", body))
    Verdict.model_validate_json(whole["content"][0]["text"])
    payload = await post(f"{upstream.url}/v1/messages", {**body, "stream": True})
    Verdict.model_validate_json(streamed_text(payload, "anthropic"))


async def test_no_schema_keeps_the_canned_answer(upstream: MockUpstream) -> None:
    """Without a schema the chat answer is still the canned text the model name asks for."""
    body = {"model": "gpt-4o-mini", "messages": MESSAGES}
    whole = orjson.loads(await post(f"{upstream.url}/v1/chat/completions", body))
    assert whole["choices"][0]["message"]["content"] == "mock answer from gpt-4o-mini"
