"""The file's `consumers:` section, checked by the one validator with the file's field names."""

from __future__ import annotations

from typing import Any

import pytest

from turnout.config.load import parse_config
from turnout.config.stored import project_problems
from turnout.errors import ConfigError
from turnout.schema import ConsumerConfig, FileConfig
from turnout.store.snapshot import ProjectSnapshot

BASE: dict[str, Any] = {
    "providers": [{"name": "openai", "kind": "openai", "api_key": "k"}],
    "routes": [
        {"name": "main", "targets": [{"provider": "openai", "model": "gpt-4o"}]},
        {"name": "off", "enabled": False, "targets": [{"provider": "openai"}]},
    ],
}


def errors_of(*consumers: dict[str, Any]) -> list[tuple[str, str]]:
    """Every error the loader reports for BASE with `consumers`."""
    with pytest.raises(ConfigError) as info:
        parse_config(BASE | {"consumers": list(consumers)}, env={})
    return list(info.value.errors)


def test_valid_consumers_load() -> None:
    """An agent on a route, a pinned chat and a memory following its agent load cleanly."""
    config = parse_config(
        BASE
        | {
            "consumers": [
                {"name": "bot", "kind": "agent", "modelRoute": "main"},
                {"name": "talk", "kind": "chat", "provider": "openai", "model": "gpt-4o-mini"},
                {"name": "notes", "kind": "memory", "agent": "bot"},
            ]
        },
        env={},
    )
    assert [c.name for c in config.consumers] == ["bot", "talk", "notes"]


def test_references_must_exist_with_a_suggestion() -> None:
    """An unknown route, provider or agent is named, with the closest name suggested."""
    assert errors_of(
        {"name": "bot", "kind": "agent", "model_route": "mian"},
        {"name": "talk", "kind": "chat", "provider": "opena"},
        {"name": "notes", "kind": "memory", "provider": "openai", "agent": "bto"},
    ) == [
        ("consumers[0].model_route", "no route named 'mian' in the project; did you mean 'main'?"),
        (
            "consumers[1].provider",
            "no provider named 'opena' in the project; did you mean 'openai'?",
        ),
        ("consumers[2].agent", "no consumer named 'bto' in the project; did you mean 'bot'?"),
    ]


def test_the_assignment_rules_read_as_on_the_api() -> None:
    """Both set, a chat's route, a model with a route, a disabled route and a consumer with
    nothing (the file has no default route) are refused with the file's field names."""
    assert errors_of(
        {"name": "a", "kind": "agent", "model_route": "main", "provider": "openai"},
        {"name": "b", "kind": "chat", "model_route": "main"},
        {"name": "c", "kind": "agent", "model_route": "main", "model": "gpt-4o"},
        {"name": "d", "kind": "agent", "model_route": "off"},
        {"name": "e", "kind": "discussion"},
        {"name": "A", "kind": "chat", "provider": "openai"},
    ) == [
        (
            "consumers[0].provider",
            "set at most one of model_route and provider: a route or a provider pin, not both",
        ),
        (
            "consumers[1].model_route",
            (
                "only agents are assigned a route; a chat pins a provider (provider) or inherits "
                "the project's default route"
            ),
        ),
        (
            "consumers[2].model",
            (
                "model goes only with a provider pin (provider) of the consumer's own; a route "
                "serves its own models, and this consumer has its route 'main'"
            ),
        ),
        ("consumers[3].model_route", "route 'off' is disabled; assign an enabled route"),
        (
            "consumers[4].provider",
            (
                "a discussion needs a route or a provider pin: set provider, or give the project a "
                "default route to inherit"
            ),
        ),
        ("consumers[5].name", "name 'A' is already taken by consumers[0]"),
    ]


def test_a_stored_project_default_is_inherited_in_the_merged_check() -> None:
    """Stored consumers without an assignment are fine when the project has a default route,
    and refused when it has none."""
    file = FileConfig.model_validate(BASE | {"project": "acme"})
    chat = ConsumerConfig.model_validate({"name": "talk", "kind": "chat"})
    with_default = ProjectSnapshot(
        id="proj_1", name="acme", default_route="main", consumers=(chat,)
    )
    assert project_problems(file, with_default) == []
    without = ProjectSnapshot(id="proj_1", name="acme", consumers=(chat,))
    assert [path for path, _ in project_problems(file, without)] == ["consumers[0].provider"]
