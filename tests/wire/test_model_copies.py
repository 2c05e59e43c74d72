"""Copies of neutral requests."""

from __future__ import annotations

import dataclasses

from turnout.wire.model import ChatRequest, Message, RawBody, TextPart, Tool


def test_with_model_copies_every_field_but_the_model() -> None:
    """`with_model` gives what `dataclasses.replace` gives: every field kept, the model new."""
    request = ChatRequest(
        [Message.user("hi")],
        model="a",
        system=[TextPart("rules")],
        tools=[Tool("f", "does f", {"type": "object"})],
        tool_choice="auto",
        response_format={"type": "json_object"},
        temperature=0.5,
        top_p=0.9,
        max_tokens=10,
        stop=["x"],
        seed=1,
        reasoning_effort="low",
        thinking={"type": "enabled"},
        user="u",
        metadata={"k": "v"},
        stream=True,
        extra={"n": 1},
        source=RawBody("openai-chat", b"{}"),
        origin="openai-chat",
        server_features=("store",),
    )
    assert request.with_model("b") == dataclasses.replace(request, model="b")
    assert request.with_model("a") is request
