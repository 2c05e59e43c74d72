"""Shared helpers of the in-process gateway tests: an app from a config dict, an httpx client
over `httpx.ASGITransport`, and SSE parsing."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import httpx
import orjson

from turnout.config.load import parse_config
from turnout.gateway.resolution.lookups import build_runtime
from turnout.gateway.server.app import GatewayApp

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from turnout.gateway.runtime.live import Runtime

USER = [{"role": "user", "content": "Why is checkout failing?"}]


def mock_provider(name: str, *, wire: str = "openai-chat", **extra: Any) -> dict[str, Any]:
    """A `mock` provider entry (in-process, faults by model name)."""
    return {"name": name, "kind": "mock", "wire": wire, **extra}


def runtime_of(config: dict[str, Any]) -> Runtime:
    """The runtime of a config dict (auth open unless the dict says otherwise)."""
    data = {"server": {"auth": "open"}, **config}
    return build_runtime(parse_config(data, env={}))


def app_of(config: dict[str, Any], **options: Any) -> GatewayApp:
    """A gateway app over the runtime of a config dict."""
    return GatewayApp(runtime_of(config), **options)


@asynccontextmanager
async def client_of(app: GatewayApp) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client calling `app` in process."""
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
        yield client


def chat(model: str, **extra: Any) -> dict[str, Any]:
    """An OpenAI Chat Completions body."""
    return {"model": model, "messages": USER, **extra}


def messages(model: str, **extra: Any) -> dict[str, Any]:
    """An Anthropic Messages body."""
    return {"model": model, "max_tokens": 64, "messages": USER, **extra}


def sse_events(text: str) -> list[tuple[str | None, str]]:
    """`(event name, data)` of each event of an SSE body (comments dropped)."""
    events: list[tuple[str | None, str]] = []
    for block in text.split("\n\n"):
        name = None
        data: list[str] = []
        for line in block.split("\n"):
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
        if data:
            events.append((name, "\n".join(data)))
    return events


def openai_text(text: str) -> str:
    """The content an OpenAI SSE body delivered."""
    out: list[str] = []
    for _, data in sse_events(text):
        if data == "[DONE]":
            continue
        obj = orjson.loads(data)
        out.extend(
            choice.get("delta", {}).get("content") or "" for choice in obj.get("choices") or ()
        )
    return "".join(out)


def anthropic_text(text: str) -> str:
    """The text an Anthropic SSE body delivered."""
    out: list[str] = []
    for name, data in sse_events(text):
        if name == "content_block_delta":
            delta = orjson.loads(data)["delta"]
            out.append(delta.get("text", ""))
    return "".join(out)
