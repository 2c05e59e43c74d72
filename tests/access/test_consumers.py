"""A consumer's assignment rules and what it resolves to, with plain values."""

from __future__ import annotations

from turnout.access.consumers import (
    API_FIELDS,
    FILE_FIELDS,
    Assignment,
    EffectiveAssignment,
    check_assignment,
    effective_assignment,
)


def check(
    consumer: Assignment, *, agent: Assignment | None = None, default: str | None = None
) -> list[tuple[str, str]]:
    """The API's problems for `consumer`."""
    return check_assignment(consumer, agent=agent, default_route=default)


def test_a_route_and_a_pin_together_are_refused() -> None:
    """Setting both a route and a provider names the rule on the provider field."""
    problems = check(Assignment("agent", route="route_1", provider="aip_1"))
    assert problems == [
        (
            "ai_provider_id",
            (
                "set at most one of model_route_id and ai_provider_id: a route or a provider pin, "
                "not both"
            ),
        )
    ]


def test_only_agents_are_assigned_a_route() -> None:
    """A chat, discussion or memory with a route is refused; an agent with one is fine."""
    assert check(Assignment("agent", route="route_1")) == []
    for kind in ("chat", "discussion", "memory"):
        assert check(Assignment(kind, route="route_1")) == [
            (
                "model_route_id",
                (
                    f"only agents are assigned a route; a {kind} pins a provider (ai_provider_id) "
                    "or inherits the project's default route"
                ),
            )
        ]


def test_model_goes_only_with_the_consumers_own_pin() -> None:
    """`model` with a named route, an inherited default or an agent's route is refused."""
    rule = "model goes only with a provider pin (ai_provider_id) of the consumer's own"
    assert check(Assignment("agent", route="route_1", model="gpt-4o")) == [
        (
            "model",
            f"{rule}; a route serves its own models, and this consumer has its route 'route_1'",
        )
    ]
    assert check(Assignment("chat", model="gpt-4o"), default="route_d") == [
        (
            "model",
            (
                f"{rule}; a route serves its own models, and this consumer has the project's "
                "default route 'route_d'"
            ),
        )
    ]
    agent = Assignment("agent", route="route_a")
    memory = Assignment("memory", model="m", agent="agent_1")
    assert check(memory, agent=agent)[0][1].endswith("has its agent's route 'route_a'")
    assert check(Assignment("chat", provider="aip_1", model="gpt-4o")) == []


def test_neither_and_no_default_is_refused_per_kind() -> None:
    """A consumer with no assignment needs a project default; the message says what to set."""
    assert check(Assignment("chat"), default="route_d") == []
    assert check(Assignment("agent")) == [
        (
            "model_route_id",
            (
                "an agent needs a route or a provider pin: set model_route_id or "
                "ai_provider_id, or give the project a default route to inherit"
            ),
        )
    ]
    assert check(Assignment("discussion")) == [
        (
            "ai_provider_id",
            (
                "a discussion needs a route or a provider pin: set ai_provider_id, or give the "
                "project a default route to inherit"
            ),
        )
    ]
    assert "belong to an agent (agent_id) that has one" in check(Assignment("memory"))[0][1]


def test_only_chats_and_memories_belong_to_an_agent() -> None:
    """An agent or discussion with an agent is refused, as is an agent that is not an agent."""
    agent = Assignment("agent", route="route_a")
    assert check(Assignment("discussion", provider="aip_1", agent="agent_1"), agent=agent) == [
        ("agent_id", "only chats and memories belong to an agent, not a discussion")
    ]
    assert check(Assignment("agent", route="route_b", agent="agent_1"), agent=agent) == [
        ("agent_id", "only chats and memories belong to an agent, not an agent")
    ]
    chat = Assignment("chat", provider="aip_1")
    assert check(Assignment("memory", agent="chat_1"), agent=chat) == [
        ("agent_id", "'chat_1' is a chat, not an agent")
    ]


def test_a_memory_follows_its_own_pin_then_its_agent_then_the_default() -> None:
    """A memory resolves to its own pin, else its agent's pin, else its agent's route, else
    the project default; a chat does not follow its agent."""
    pinned = Assignment("agent", provider="aip_a", model="m-a")
    routed = Assignment("agent", route="route_a")
    bare = Assignment("agent")
    own = Assignment("memory", provider="aip_m", agent="agent_1")
    follower = Assignment("memory", agent="agent_1")
    assert effective_assignment(own, agent=pinned, default_route="d") == EffectiveAssignment(
        provider="aip_m"
    )
    assert effective_assignment(follower, agent=pinned, default_route="d") == EffectiveAssignment(
        provider="aip_a", model="m-a", inherited_from="agent"
    )
    assert effective_assignment(follower, agent=routed, default_route="d") == EffectiveAssignment(
        route="route_a", inherited_from="agent"
    )
    assert effective_assignment(follower, agent=bare, default_route="d") == EffectiveAssignment(
        route="d", inherited_from="project"
    )
    assert effective_assignment(follower, agent=bare, default_route=None).is_empty
    chat = Assignment("chat", agent="agent_1")
    assert effective_assignment(chat, agent=routed, default_route="d").route == "d"


def test_the_file_and_the_api_share_the_wording() -> None:
    """The same rule reads the same on both, with only the field names told apart."""
    consumer = Assignment("chat", route="r")
    api = check_assignment(consumer, agent=None, default_route=None, fields=API_FIELDS)
    file = check_assignment(consumer, agent=None, default_route=None, fields=FILE_FIELDS)
    assert file == [("model_route", api[0][1].replace("ai_provider_id", "provider"))]
