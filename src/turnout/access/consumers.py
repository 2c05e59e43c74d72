"""A consumer's assignment: which rules it must meet, and what it resolves to.

A consumer (an agent, chat, discussion or memory) is assigned a route, or pinned to a provider
(and optionally a model), or inherits the project's default route. The config file names these
by name and the admin API by id; this module takes them as plain strings either way, so that
the file and the API share one rule and one wording. Only the field names in the messages
differ (`ConsumerFields`).

Rule 1: at most one of a route and a provider pin; `model` only with the consumer's own pin.
Rule 2: only agents have a route; chats and discussions pin a provider or inherit the default.
Rule 3: only chats and memories belong to an agent, and that agent must be of kind `agent`.
Rule 4: a memory resolves to its own pin, else its agent's pin, else its agent's route, else the
project default; every other consumer to its own route or pin, else the project default.
Rule 5: a consumer that resolves to nothing is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

if TYPE_CHECKING:
    from turnout.schema import ConsumerConfig

__all__ = [
    "API_FIELDS",
    "CONSUMER_KINDS",
    "FILE_FIELDS",
    "Assignment",
    "ConsumerFields",
    "EffectiveAssignment",
    "check_assignment",
    "disabled_route_message",
    "effective_assignment",
]

ConsumerKind = Literal["agent", "chat", "discussion", "memory"]
CONSUMER_KINDS: Final[tuple[str, ...]] = ("agent", "chat", "discussion", "memory")
_BELONG_TO_AGENT: Final = frozenset({"chat", "memory"})

Problems = list[tuple[str, str]]


@dataclass(frozen=True, slots=True)
class ConsumerFields:
    """The names the fields go by in messages: the file's or the admin API's."""

    route: str
    provider: str
    agent: str
    model: str = "model"


API_FIELDS: Final = ConsumerFields(
    route="model_route_id", provider="ai_provider_id", agent="agent_id"
)
"""The admin API's field names (references by id)."""
FILE_FIELDS: Final = ConsumerFields(route="model_route", provider="provider", agent="agent")
"""The config file's field names (references by name)."""


@dataclass(frozen=True, slots=True)
class Assignment:
    """What one consumer is given: its `kind`, and a route, a provider (and model) and the agent
    it belongs to, each a name or an id (None: not set)."""

    kind: str
    route: str | None = None
    provider: str | None = None
    model: str | None = None
    agent: str | None = None

    @classmethod
    def from_config(cls, consumer: ConsumerConfig) -> Assignment:
        """The assignment a config file's consumer gives (references by name)."""
        return cls(
            kind=consumer.kind,
            route=consumer.model_route,
            provider=consumer.provider,
            model=consumer.model,
            agent=consumer.agent,
        )


@dataclass(frozen=True, slots=True)
class EffectiveAssignment:
    """What a consumer resolves to: a route, or a provider pin (with the model asked of it, None:
    the caller's), or nothing. `inherited_from` says where it came from: None (its own),
    `"agent"` or `"project"` (the default route)."""

    route: str | None = None
    provider: str | None = None
    model: str | None = None
    inherited_from: Literal["agent", "project"] | None = None

    @property
    def is_empty(self) -> bool:
        """Whether the consumer resolves to nothing."""
        return self.route is None and self.provider is None


def effective_assignment(
    consumer: Assignment, *, agent: Assignment | None, default_route: str | None
) -> EffectiveAssignment:
    """Rule 4: what `consumer` resolves to. `agent` is the assignment of the agent it belongs
    to (None: none, or not a memory's concern); `default_route` is the project's default."""
    if consumer.route is not None:
        return EffectiveAssignment(route=consumer.route)
    if consumer.provider is not None:
        return EffectiveAssignment(provider=consumer.provider, model=consumer.model)
    if consumer.kind == "memory" and agent is not None:
        if agent.provider is not None:
            return EffectiveAssignment(
                provider=agent.provider, model=agent.model, inherited_from="agent"
            )
        if agent.route is not None:
            return EffectiveAssignment(route=agent.route, inherited_from="agent")
    if default_route is not None:
        return EffectiveAssignment(route=default_route, inherited_from="project")
    return EffectiveAssignment()


def check_assignment(
    consumer: Assignment,
    *,
    agent: Assignment | None,
    default_route: str | None,
    fields: ConsumerFields = API_FIELDS,
) -> Problems:
    """Every rule `consumer` breaks, as `(field, message)`, the field named as in `fields`.

    References are not looked up here: the caller has checked that each named route, provider
    and agent exists, and passes the agent's own assignment as `agent`."""
    kind = consumer.kind
    if kind not in CONSUMER_KINDS:
        return [("kind", f"unknown consumer kind {kind!r}: use one of {', '.join(CONSUMER_KINDS)}")]
    problems: Problems = []
    if consumer.route is not None and consumer.provider is not None:
        both = f"set at most one of {fields.route} and {fields.provider}"
        problems.append((fields.provider, f"{both}: a route or a provider pin, not both"))
    elif consumer.route is not None and kind != "agent":
        rule = f"only agents are assigned a route; a {kind} pins a provider ({fields.provider})"
        problems.append((fields.route, f"{rule} or inherits the project's default route"))
    problems.extend(_agent_problems(consumer, agent, fields))
    effective = effective_assignment(consumer, agent=agent, default_route=default_route)
    if consumer.model is not None and consumer.provider is None:
        problems.append((fields.model, _model_message(effective, fields)))
    elif effective.is_empty and not problems:
        field = fields.route if kind == "agent" else fields.provider
        need = f"{_a(kind)} needs a route or a provider pin: {_ways(kind, fields)}"
        problems.append((field, f"{need}, or give the project a default route to inherit"))
    return problems


def disabled_route_message(route: str) -> str:
    """What is wrong with assigning a disabled route (the caller knows whether it is)."""
    return f"route {route!r} is disabled; assign an enabled route"


def _agent_problems(
    consumer: Assignment, agent: Assignment | None, fields: ConsumerFields
) -> Problems:
    if consumer.agent is None:
        return []
    if consumer.kind not in _BELONG_TO_AGENT:
        return [
            (fields.agent, f"only chats and memories belong to an agent, not {_a(consumer.kind)}")
        ]
    if agent is not None and agent.kind != "agent":
        return [(fields.agent, f"{consumer.agent!r} is {_a(agent.kind)}, not an agent")]
    return []


def _model_message(effective: EffectiveAssignment, fields: ConsumerFields) -> str:
    rule = f"{fields.model} goes only with a provider pin ({fields.provider}) of the consumer's own"
    if effective.route is None:
        return rule
    where = {None: "its", "agent": "its agent's", "project": "the project's default"}
    has = f"{where[effective.inherited_from]} route {effective.route!r}"
    return f"{rule}; a route serves its own models, and this consumer has {has}"


def _a(kind: str) -> str:
    return f"an {kind}" if kind == "agent" else f"a {kind}"


def _ways(kind: str, fields: ConsumerFields) -> str:
    if kind == "agent":
        return f"set {fields.route} or {fields.provider}"
    if kind == "memory":
        return f"set {fields.provider}, or belong to an agent ({fields.agent}) that has one"
    return f"set {fields.provider}"
