"""Caller keys, access bindings, policies, data-handling requirements and consumers."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from turnout.schema._base import Model

__all__ = [
    "BindingConfig",
    "ConsumerConfig",
    "GrantConfig",
    "KeyConfig",
    "PolicyConfig",
    "RequireConfig",
    "SubjectConfig",
]


class RequireConfig(Model):
    """Data-handling requirements on a key or binding: a target whose provider does not
    promise them is skipped (`policy_skipped`)."""

    zero_data_retention: bool = Field(
        False, description="Only providers that promise `zero_data_retention`."
    )
    no_prompt_training: bool = Field(
        False, description="Only providers that promise `no_prompt_training`."
    )
    jurisdiction: tuple[str, ...] = Field(
        (),
        description="Only providers whose `jurisdiction` is one of these (ignoring case). "
        "Empty: any.",
    )


class KeyConfig(Model):
    """A caller key declared in the file: plaintext `key` (from `${VAR}`) or a stored `hash`,
    with the identity and limits of the caller it stands for. A declared key may be any
    non-empty string (`sk-1234` included): only the keys turnout generates have a fixed form
    (`tk_` and 43 random characters)."""

    name: str = Field(min_length=1, description="The key's name in logs, bindings and errors.")
    key: str | None = Field(
        None,
        min_length=1,
        description='The key itself, usually `"${APP_KEY}"`: any non-empty string. Set exactly '
        "one of `key` and `hash`.",
    )
    hash: str | None = Field(
        None,
        description="The key's stored form: `sha256:` and 64 hex digits, as `turnout keys "
        "create` prints it.",
    )
    user: str | None = Field(None, description="The user this key speaks for.")
    teams: tuple[str, ...] = Field((), description="The caller's teams.")
    groups: tuple[str, ...] = Field((), description="The caller's groups.")
    agent: str | None = Field(None, description="The agent this key speaks for.")
    agent_labels: dict[str, str] = Field(
        default_factory=dict, description="Labels of the agent, name to value."
    )
    workload: str | None = Field(None, description="The workload this key speaks for.")
    workload_blueprint: str | None = Field(None, description="The blueprint of that workload.")
    routes: tuple[str, ...] = Field(
        (),
        description="The only routes this key may call. Empty: no limit. With exactly one, a "
        "request without a model goes there.",
    )
    allowed_models: tuple[str, ...] = Field(
        (),
        description="Model patterns this key may ask for. Empty: no limit. Outside them: 400 "
        "`MODEL_DENIED`.",
    )
    recording: Literal["full", "usage_only"] = Field(
        "full",
        description="`usage_only`: this key's answers are never written to the response "
        "cache (it may still read it).",
    )
    require: RequireConfig = Field(
        RequireConfig(),
        description="Data-handling requirements on every target that serves this key.",
    )


class SubjectConfig(Model):
    """One subject of a binding, the callers it covers: exactly one field set."""

    everyone: bool | None = Field(None, description="`true` covers every caller.")
    user: str | None = Field(None, description="Callers whose key has this `user`.")
    team: str | None = Field(None, description="Callers whose key lists this team.")
    group: str | None = Field(None, description="Callers whose key lists this group.")
    agent: str | None = Field(None, description="Callers whose key has this `agent`.")
    agent_label: str | None = Field(
        None,
        description="`name=value`: callers whose agent has that label value; `name` alone: any "
        "value.",
    )
    workload: str | None = Field(None, description="Callers whose key has this `workload`.")
    workload_blueprint: str | None = Field(
        None, description="Callers whose key has this `workload_blueprint`."
    )
    key: str | None = Field(None, description="The caller using the key of this name.")


class GrantConfig(Model):
    """A model grant; `route` steers the grant's models through that route."""

    models: str = Field(min_length=1, description="A model pattern: the models this grant covers.")
    route: str | None = Field(
        None,
        description="Send these models through this route (it must serve them). Null: the "
        "route the model would get anyway.",
    )


class BindingConfig(Model):
    """An access binding: who (subjects) may use which models (grants), and through which
    route. While no enabled allow binding grants any model, everyone may use every model."""

    name: str = Field(min_length=1, description="The binding's name, used in errors and ties.")
    mode: Literal["allow", "deny"] = Field(
        "allow",
        description="`allow` grants the models (and may steer them); `deny` refuses them with "
        "403 `POLICY_DENIED`, whatever allows them.",
    )
    enabled: bool = Field(True, description="A disabled binding has no effect.")
    subjects: tuple[SubjectConfig, ...] = Field(
        min_length=1, description="The callers this binding covers."
    )
    grants: tuple[GrantConfig, ...] = Field((), description="The models it grants or denies.")
    require: RequireConfig = Field(
        RequireConfig(),
        description="Data-handling requirements on every target that serves a request this "
        "binding granted.",
    )


class PolicyConfig(Model):
    """A routing policy: skip targets by provider, family, route or jurisdiction."""

    name: str = Field(min_length=1, description="The policy's name, in routing records.")
    mode: Literal["enforce", "observe"] = Field(
        "enforce",
        description="`enforce` skips the targets it matches (`policy_skipped`); `observe` only "
        "records that it would have, and calls them.",
    )
    deny_when: dict[
        Literal["provider", "family", "route", "jurisdiction"], str | tuple[str, ...]
    ] = Field(
        description="Conditions on a target, all of which must hold; a list matches any "
        "of its values. `family` and `jurisdiction` ignore case.",
    )


class ConsumerConfig(Model):
    """A caller object with an assignment: an agent, chat, discussion or memory, assigned a
    route, pinned to a provider (one call to it, no failover), or inheriting the project's
    default route. Set at most one of `model_route` and
    `provider`; a consumer with neither needs a project default route to inherit (the file has
    none, so in the file it is an error)."""

    name: str = Field(min_length=1, description="The consumer's name, unique in the project.")
    kind: Literal["agent", "chat", "discussion", "memory"] = Field(
        description="What kind of caller it is. Only agents are assigned a route; chats and "
        "discussions pin a provider or inherit; a memory pins a provider or follows its agent."
    )
    model_route: str | None = Field(
        None, description="Agents only: the route it is assigned (a route of the project)."
    )
    provider: str | None = Field(
        None,
        description="A provider it is pinned to instead of a route: one call with the "
        "provider's defaults, no failover.",
    )
    model: str | None = Field(
        None,
        description="The model asked of the pinned `provider` (only with `provider`). Null: "
        "the model the caller asked for.",
    )
    agent: str | None = Field(
        None,
        description="Chats and memories: the agent (a consumer of kind `agent`) it belongs "
        "to. A memory without a `provider` of its own uses its agent's pin, else its agent's "
        "route, else the project default.",
    )
