"""The configuration reference page, generated from the configuration schema."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from turnout.config.reference import (
    EXAMPLES,
    REGENERATE,
    ROOT,
    STRATEGY_OPTIONS,
    STRATEGY_STARTS,
    field_paths,
    object_sections,
    render_reference,
)
from turnout.routing.strategy_settings import STRATEGY_TYPES

PAGE = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_every_field_has_a_description() -> None:
    """Every field of every object reachable from the file's root says what it means."""
    missing = [
        section.field_path(name)
        for section in object_sections()
        for name, info in section.model.model_fields.items()
        if not (info.description or "").strip()
    ]
    assert not missing, f"fields without a description: {', '.join(missing)}"


def test_committed_page_is_the_rendered_one() -> None:
    """docs/configuration.md is exactly what the generator renders from the schema today."""
    committed = PAGE.read_text(encoding="utf-8")
    assert committed == render_reference(), (
        f"docs/configuration.md is out of date; regenerate it with: {REGENERATE}"
    )


def test_every_field_path_is_on_the_page() -> None:
    """Each field's dotted path, and every place an object appears, is named on the page."""
    page = render_reference()
    paths = field_paths()
    paths += [path for section in object_sections() for path in section.paths if path]
    absent = [path for path in paths if f"`{path}`" not in page]
    assert not absent, f"paths missing from the page: {', '.join(absent)}"


def test_walk_reaches_nested_objects() -> None:
    """The walk finds objects inside lists and maps, and lists a shared object's every place."""
    sections = {section.title: section for section in object_sections()}
    assert sections["The file"].model is ROOT
    assert sections["Target"].paths == ("routes[].targets[]",)
    assert sections["Price"].paths == ("providers[].prices.<model>",)
    assert sections["Breaker"].paths == ("defaults.circuit_breaker", "routes[].circuit_breaker")
    assert "routes[].targets[].first_token_timeout" in field_paths()


def test_every_strategy_and_option_is_described() -> None:
    """Each strategy type and option the engine accepts has a line on the page."""
    options = {option for accepted in STRATEGY_TYPES.values() for option in accepted}
    assert set(STRATEGY_STARTS) == set(STRATEGY_TYPES)
    assert set(STRATEGY_OPTIONS) == options
    page = render_reference()
    for option in options:
        assert f"`routes[].strategy.{option}`" in page


@pytest.mark.parametrize("model", list(EXAMPLES), ids=lambda model: model.__name__)
def test_examples_are_valid_configuration(model: type) -> None:
    """Each example on the page is a configuration fragment the file's schema accepts."""
    fragment = yaml.safe_load(EXAMPLES[model])
    if "targets" in fragment and "routes" not in fragment:  # a route's targets, shown alone
        fragment = {"routes": [{"name": "example", **fragment}]}
    ROOT.model_validate(fragment)
