"""The admin API's own request and response shapes, as pydantic models: what the OpenAPI
document describes beside the config file's models (`turnout.schema`), which stored bodies
use as they are.

Rule 1: request models forbid unknown fields; response models describe what is always there
and allow more (a stored object carries its config fields too).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from turnout.schema import SubjectConfig

__all__ = [
    "REQUEST_MODELS",
    "RESPONSE_MODELS",
    "AuditedRequest",
    "Change",
    "ChangeList",
    "ConsumerBody",
    "CreatedKey",
    "ErrorEnvelope",
    "HealthView",
    "ObjectList",
    "ProjectBody",
    "ProjectList",
    "RoutingTestBody",
    "RoutingTestResult",
    "StoredObject",
    "StoredProject",
    "UpstreamsView",
    "UsageReport",
]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Response(BaseModel):
    model_config = ConfigDict(extra="allow")


class ErrorDetail(_Response):
    """What went wrong: a stable `code`, a `message` naming the field and the rule, and
    `meta` (validation problems in `meta.errors`; dependents by kind)."""

    code: str
    message: str
    meta: dict[str, Any]


class ErrorEnvelope(_Response):
    """Every 4xx and 5xx answer."""

    error: ErrorDetail


class ProjectBody(_Request):
    """A project: its unique name and the route its consumers inherit."""

    name: str = Field(min_length=1, max_length=128, description="Unique among projects.")
    default_model_route_id: str | None = Field(
        None, description="A route of this project (a new project has none yet)."
    )


class ConsumerBody(_Request):
    """A consumer and its assignment: a route, a provider pin, or nothing (the project's
    default route). References go by id, or by name with the config file's field names."""

    name: str = Field(min_length=1, max_length=128)
    kind: Literal["agent", "chat", "discussion", "memory"]
    model_route_id: str | None = Field(None, description="The route it is assigned (agents).")
    ai_provider_id: str | None = Field(None, description="A provider it is pinned to.")
    model: str | None = Field(None, description="The model asked of the pinned provider.")
    agent_id: str | None = Field(None, description="The agent it belongs to.")
    model_route: str | None = Field(None, description="`model_route_id`, by the route's name.")
    provider: str | None = Field(None, description="`ai_provider_id`, by the provider's name.")
    agent: str | None = Field(None, description="`agent_id`, by the agent's name.")


class StoredObject(_Response):
    """A stored object: its id, its config fields, and when it was created and updated."""

    id: str
    created_at: str
    updated_at: str


class StoredProject(StoredObject):
    """A project."""

    name: str
    default_model_route_id: str | None


class CreatedKey(StoredObject):
    """A new key: `key` is its plaintext, returned this once and never again."""

    key: str


class ObjectList(_Response):
    """Every object of a kind in the project, oldest first."""

    data: list[StoredObject]


class ProjectList(_Response):
    """Every project, oldest first."""

    data: list[StoredProject]


class Change(_Response):
    """One write: who (`actor`, the admin key's id), when, what, and the object before and
    after (secrets masked)."""

    version: int
    at: str
    actor: str | None
    action: str
    kind: str
    object_id: str
    project_id: str | None
    before: dict[str, Any] | None
    after: dict[str, Any] | None


class ChangeList(_Response):
    """Changes, newest first."""

    data: list[Change]


class KeyHealthView(_Response):
    """One health key: its state, failures in a row, and the seconds left on a cooldown, an
    open breaker or a park."""

    key: str
    provider: str | None
    model: str | None
    route: str | None
    target: str | None
    state: Literal["available", "cooling_down", "open", "half_open", "parked"]
    failures: int
    seconds_left: float | None


class BreakerView(_Response):
    """The registry's breaker policy."""

    enabled: bool
    failure_threshold: int
    cooldown_seconds: float
    failure_window_seconds: float | None


class ProjectHealth(_Response):
    """The health registry of one served project."""

    project: str
    project_id: str | None
    breaker: BreakerView
    keys: list[KeyHealthView]


class HealthView(_Response):
    """This replica's health, per served project."""

    data: list[ProjectHealth]


class TargetView(_Response):
    """A target in try order, with its health."""

    name: str
    provider: str
    model: str | None
    fallback_only: bool
    paused: bool
    state: str
    healthy: bool


class UpstreamRoute(_Response):
    """A route with at least two targets: its targets in try order, the healthy ones, the
    one a request starts at now (`active`), the bindings that grant it, and the requests it
    served and its failovers over the last 24 hours on this replica."""

    project: str
    project_id: str | None
    route: str
    kind: str
    strategy: str
    targets: list[TargetView]
    healthy: list[str]
    active: str | None
    granted_by: list[str]
    traffic_24h: int
    failovers_24h: int


class UpstreamProvider(_Response):
    """A provider and the routes it serves."""

    project: str
    project_id: str | None
    provider: str
    routes: list[str]


class UpstreamsView(_Response):
    """Routes with failover, and providers with their routes."""

    routes: list[UpstreamRoute]
    providers: list[UpstreamProvider]


class RoutingTestBody(_Request):
    """Where would `model` go for this caller? Name the caller by `key_id` (a stored key's
    id, or a config-file key's name) or by `subject`; neither: the anonymous caller."""

    project_id: str | None = Field(
        None, min_length=1, max_length=64, description="Default: the config file's project."
    )
    model: str = Field(min_length=1, max_length=256)
    endpoint: Literal["chat", "messages", "embeddings", "count_tokens"] = "chat"
    key_id: str | None = Field(None, min_length=1, max_length=128)
    subject: SubjectConfig | None = None


class Refusal(_Response):
    """How the gateway would refuse the request."""

    status: int
    code: str
    message: str


class Resolved(_Response):
    """Where a model goes: the route, how it matched, the targets in try order."""

    route: str
    kind: str
    matched_by: str
    pattern: str | None
    strategy: str
    targets: list[dict[str, Any]]
    fallbacks: dict[str, list[str]]


class GrantView(_Response):
    """The grant that allows the model to the caller (`binding` None: the implicit grant)."""

    binding: str | None
    subject: str | None
    models: str | None
    route: str | None
    text: str


class RoutingTestResult(_Response):
    """The answer of a routing test: `resolved` or `refused`; `grant` when a grant decided;
    `without_grant` where the model would go if no grant named a route (only when the
    winning grant names one)."""

    project: str
    project_id: str | None
    model: str
    caller: str
    resolved: Resolved | None
    refused: Refusal | None
    grant: GrantView | None
    without_grant: Resolved | Refusal | None


class AuditedRequest(_Response):
    """One request as audited: who called, when, how it ended, usage and cost, its routing
    record (`routing`) and its attempt rows (`attempts`)."""

    request_id: str
    at: str
    routing: dict[str, Any] | None
    attempts: list[dict[str, Any]]


class UsageReport(_Response):
    """One row per group: its naming fields, `requests`, token sums, `cost` (USD, null when
    nothing in the group was priced) and `unpriced_requests`."""

    data: list[dict[str, Any]]


REQUEST_MODELS: tuple[type[BaseModel], ...] = (ProjectBody, ConsumerBody, RoutingTestBody)
RESPONSE_MODELS: tuple[type[BaseModel], ...] = (
    ErrorEnvelope,
    StoredObject,
    StoredProject,
    CreatedKey,
    ObjectList,
    ProjectList,
    ChangeList,
    HealthView,
    UpstreamsView,
    RoutingTestResult,
    AuditedRequest,
    UsageReport,
)
