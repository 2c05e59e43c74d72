"""The gateway refuses what no vendor accepts before any call, and what translation would
change silently: out-of-range numbers, unknown blocks bound for the other family, emptied
messages; while a same-format target still gets unknown blocks verbatim."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tests.gateway._app_support import app_of, chat, client_of, messages, mock_provider

if TYPE_CHECKING:
    from turnout.gateway.server.app import GatewayApp

CONFIG: dict[str, Any] = {
    "providers": [mock_provider("oa"), mock_provider("ant", wire="anthropic-messages")],
    "routes": [
        {"name": "main", "models": ["gpt-4o-mini"], "targets": [{"provider": "oa"}]},
        {"name": "claude", "models": ["claude-x"], "targets": [{"provider": "ant"}]},
        {
            "name": "cross",
            "models": ["cross"],
            "allow_cross_provider": True,
            "targets": [{"provider": "oa", "model": "gpt-cross"}],
        },
    ],
}
FOO = {"type": "foo", "data": 1}


def _sent(app: GatewayApp, provider: str) -> list[dict[str, Any]]:
    assert app.runtime is not None
    return [entry.as_dict()["body"] for entry in app.runtime.providers[provider].requests]


async def test_out_of_range_numbers_are_400_and_nothing_is_sent() -> None:
    """max_tokens -5, n -1 and max_tokens 2**63 are refused at the edge: 400 invalid_request
    naming the field, and no upstream call."""
    app = app_of(CONFIG)
    async with client_of(app) as client:
        for field, value in (("max_tokens", -5), ("n", -1), ("max_tokens", 2**63)):
            reply = await client.post(
                "/v1/chat/completions", json=chat("gpt-4o-mini", **{field: value})
            )
            assert reply.status_code == 400
            error = reply.json()["error"]
            assert error["code"] == "invalid_request"
            assert error["message"].startswith(f"{field}: must be a whole number from 1 to ")
    assert _sent(app, "oa") == []


async def test_unknown_block_to_an_openai_target_is_400_naming_it() -> None:
    """An unknown Anthropic block bound for an OpenAI target is refused with its path and
    type, and no emptied message goes upstream."""
    app = app_of(CONFIG)
    body = messages("cross", messages=[{"role": "user", "content": [FOO]}])
    async with client_of(app) as client:
        reply = await client.post("/v1/messages", json=body)
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["message"].startswith('messages[0].content[0].type: unknown content block "foo"')
    assert _sent(app, "oa") == []


async def test_unknown_block_to_an_anthropic_target_is_forwarded_verbatim() -> None:
    """The same unknown block reaches an Anthropic target untouched (it judges the block)."""
    app = app_of(CONFIG)
    content = [{"type": "text", "text": "hi"}, FOO]
    body = messages("claude-x", messages=[{"role": "user", "content": content}])
    async with client_of(app) as client:
        reply = await client.post("/v1/messages", json=body)
    assert reply.status_code == 200
    assert _sent(app, "ant")[0]["messages"][0]["content"] == content
