"""The served configuration of a stored project: file objects and stored ones together."""

from __future__ import annotations

from turnout.config.stored import project_config, project_problems
from turnout.schema import FileConfig, ProviderConfig, RouteConfig
from turnout.store.snapshot import ProjectSnapshot

FILE = FileConfig.model_validate(
    {
        "project": "acme",
        "state": "memory",
        "providers": [{"name": "openai", "kind": "openai", "api_key": "sk-file"}],
        "routes": [{"name": "main", "targets": [{"provider": "openai", "model": "gpt-4o"}]}],
    }
)
STORED_ROUTE = RouteConfig.model_validate(
    {"name": "extra", "targets": [{"provider": "openai", "model": "gpt-4o-mini"}]}
)


def test_the_file_project_gets_file_and_stored_objects() -> None:
    """The file's project is served from the file plus its stored objects."""
    project = ProjectSnapshot(id="proj_1", name="acme", routes=(STORED_ROUTE,))
    served = project_config(FILE, project)
    assert [r.name for r in served.routes] == ["main", "extra"]
    assert project_problems(FILE, project) == []


def test_another_project_gets_only_its_own_objects() -> None:
    """A stored project other than the file's keeps only the file's shared settings."""
    provider = ProviderConfig.model_validate({"name": "a", "kind": "anthropic", "api_key": "k"})
    project = ProjectSnapshot(id="proj_2", name="other", providers=(provider,))
    served = project_config(FILE, project)
    assert served.project == "other"
    assert [p.name for p in served.providers] == ["a"]
    assert served.routes == ()


def test_a_stored_route_clashing_with_a_file_route_is_a_problem() -> None:
    """A stored route named like a file route is refused by the file's own validator."""
    clash = STORED_ROUTE.model_copy(update={"name": "main"})
    problems = project_problems(FILE, ProjectSnapshot(id="proj_1", name="acme", routes=(clash,)))
    assert any("main" in message for _, message in problems)


def test_a_project_with_nothing_stored_is_the_file_itself() -> None:
    """With nothing stored in the file's project, its configuration is the file's own object,
    which the validator accepted when the file was loaded and does not check again."""
    project = ProjectSnapshot(id="proj_1", name="acme")
    assert project_config(FILE, project) is FILE
