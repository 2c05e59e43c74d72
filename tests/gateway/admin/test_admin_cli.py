"""`turnout keys create|list|revoke` and `turnout import litellm --into-store`, run through
`turnout.cli.main`: with `--store` on a real SQLite file and a PostgreSQL schema, and with
`--url` against a real gateway serving the admin API (a revoked key is refused on the next
request)."""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any

import httpx
import openai
import pytest
import yaml
from sqlalchemy import text

from tests.gateway.admin._support import (
    ADMIN_KEY,
    HEADERS,
    StoreContext,
    file_config,
    running_in_thread,
)
from tests.store.conftest import SECRET_KEY
from turnout.access.keys import hash_key
from turnout.cli import main
from turnout.schema import KeyConfig
from turnout.store import SecretBox, migrate, open_store, service

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from turnout.store import Store

FIXTURES = "tests/fixtures/litellm"
LITELLM_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "LITELLM_MASTER_KEY")


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of an empty store: a SQLite file, or a PostgreSQL schema of the test's own."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/cli/turnout.db"
        return
    database: str = request.getfixturevalue("postgres_url")
    schema = f"t_{uuid.uuid4().hex[:12]}"
    setup = open_store(database)
    with setup.engine.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    yield f"{database}?options=-csearch_path%3D{schema}"
    with setup.engine.begin() as connection:
        connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
    setup.close()


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The store's secret key and the LiteLLM fixtures' variables, set."""
    monkeypatch.setenv("TURNOUT_SECRET_KEY", SECRET_KEY)
    for name in LITELLM_VARIABLES:
        monkeypatch.setenv(name, f"value-of-{name.lower()}")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`turnout ARGV`: the exit status, standard output and standard error."""
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def opened(url: str) -> Store:
    """The store at `url`, for checking what a command wrote."""
    return open_store(url, secrets=SecretBox(SECRET_KEY))


# ---- keys with --store ----------------------------------------------------------------------


def test_keys_create_list_revoke_against_a_store(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A key created with --store is stored by its hash with its identity, listed without key
    or hash, revoked by name (twice: still exit 0), and the audit names the actor `cli`."""
    store = opened(store_url)
    migrate(store)
    service.create_project(store, {"name": "default"})
    status, out, _ = run(
        capsys, "keys", "create", "--store", store_url, "--name", "ci", "--user", "ana",
        "--team", "support", "--team", "billing", "--allowed-model", "gpt-*", "--json",
    )  # fmt: skip
    assert status == 0
    created = json.loads(out)
    assert created["key"].startswith("tk_")
    assert created["teams"] == ["support", "billing"]
    project = service.list_projects(store)[0]
    snapshot_hashes = {row["id"]: row for row in service.list_keys(store, project["id"])}
    assert set(snapshot_hashes) == {created["id"]}

    status, out, _ = run(capsys, "keys", "list", "--store", store_url)
    assert status == 0
    assert created["id"] in out
    assert "user=ana teams=support,billing models=gpt-*" in out
    assert created["key"] not in out
    assert hash_key(created["key"]) not in out
    status, listed, _ = run(capsys, "keys", "list", "--store", store_url, "--json")
    assert "sha256:" not in listed
    assert created["key"] not in listed
    assert json.loads(listed)[0]["revoked_at"] is None

    assert run(capsys, "keys", "revoke", "ci", "--store", store_url)[0] == 0
    first = service.get_key(store, project["id"], created["id"])["revoked_at"]
    assert first is not None
    status, out, _ = run(capsys, "keys", "revoke", created["id"], "--store", store_url)
    assert status == 0
    assert "already revoked" in out
    assert service.get_key(store, project["id"], created["id"])["revoked_at"] == first
    actors = {change["actor"] for change in service.list_changes(store)}
    assert actors == {None, "cli"}
    store.close()


def test_keys_errors_name_what_was_wrong(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unknown key, an unknown project and a missing --name are exit 1 naming them."""
    store = opened(store_url)
    migrate(store)
    service.create_project(store, {"name": "team-a"})
    store.close()
    status, _, err = run(capsys, "keys", "revoke", "key_nope", "--store", store_url,
                         "--project", "team-a")  # fmt: skip
    assert status == 1
    assert "'key_nope'" in err
    status, _, err = run(capsys, "keys", "list", "--store", store_url)
    assert status == 1
    assert "no project with the id or name 'default'" in err
    status, _, err = run(capsys, "keys", "create", "--store", store_url, "--project", "team-a")
    assert status == 1
    assert "--name" in err


def test_keys_create_without_a_target_prints_a_config_entry(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Without --url or --store, `keys create` prints a key and its hash (with the identity
    given, as YAML a config file reads), storing nothing; `keys list` needs a target."""
    status, out, _ = run(capsys, "keys", "create", "--json")
    assert status == 0
    record = json.loads(out)
    assert record["hash"] == hash_key(record["key"])
    assert record["name"] == "app"
    status, _, err = run(capsys, "keys", "list")
    assert status == 1
    assert "--url" in err
    status, out, _ = run(capsys, "keys", "create", "--name", "bot", "--team", "ops",
                         "--allowed-model", "*-mini")  # fmt: skip
    assert status == 0
    entry = yaml.safe_load(out.split("config entry:\n", 1)[1])["keys"][0]
    assert KeyConfig(**entry).allowed_models == ("*-mini",)
    assert entry["teams"] == ["ops"]


# ---- keys with --url ------------------------------------------------------------------------


def test_keys_through_the_admin_api_and_a_revoked_key_is_refused(
    store: Store, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key created with --url serves chat through the OpenAI SDK; after `keys revoke` the
    next request is 401; a wrong admin key is exit 1 and no output shows the admin key."""
    monkeypatch.setenv("TURNOUT_ADMIN_KEY", ADMIN_KEY)
    context = StoreContext(store, file_config())
    with running_in_thread(context) as url:
        made = httpx.post(f"{url}/admin/v1/projects", json={"name": "default"}, headers=HEADERS)
        assert made.status_code == 201
        status, out, err = run(
            capsys, "keys", "create", "--url", url, "--name", "app", "--route", "file-route",
            "--json",
        )  # fmt: skip
        assert status == 0, err
        created = json.loads(out)
        client = openai.OpenAI(api_key=created["key"], base_url=f"{url}/v1", max_retries=0)
        with client:
            messages: list[openai.types.chat.ChatCompletionMessageParam] = [
                {"role": "user", "content": "hello"}
            ]
            answer = client.chat.completions.create(model="file-1", messages=messages)
            assert answer.choices
            status, out, _ = run(capsys, "keys", "list", "--url", url)
            assert status == 0
            assert "routes=file-route" in out
            assert created["key"] not in out
            status, out, _ = run(capsys, "keys", "revoke", "app", "--url", url)
            assert status == 0
            assert created["id"] in out
            with pytest.raises(openai.AuthenticationError):
                client.chat.completions.create(model="file-1", messages=messages)
        status, out, err = run(capsys, "keys", "revoke", "ghost", "--url", url)
        assert status == 1
        assert "'ghost'" in err
        status, out, err = run(
            capsys, "keys", "list", "--url", url, "--admin-key", "wrong-admin-key-000"
        )
        assert status == 1
        assert "admin key was refused" in err
        assert "wrong-admin-key-000" not in out + err
        assert ADMIN_KEY not in out + err


# ---- import litellm --into-store ------------------------------------------------------------


def test_import_into_a_store_then_a_clash_needs_replace(
    store_url: str, capsys: pytest.CaptureFixture[str], secret_env: None
) -> None:
    """A LiteLLM file imported with --store creates the project with its providers (secrets
    stored from the environment) and routes (fallbacks included); importing it again refuses,
    naming the clashes, and --replace updates them."""
    fixture = f"{FIXTURES}/openai_anthropic_failover.yaml"
    status, out, err = run(capsys, "import", "litellm", fixture, "--into-store",
                           "--store", store_url, "--project", "support")  # fmt: skip
    assert status == 0, err
    assert "providers: 2 created, 0 updated" in out
    assert "routes: 3 created, 0 updated" in out
    assert "not stored: keys" in out
    assert "note: not carried: litellm_settings.drop_params" in out
    store = opened(store_url)
    project = service.list_projects(store)[0]
    assert project["name"] == "support"
    routes = service.list_objects(store, "route", project["id"])
    assert [r["name"] for r in routes] == ["chat", "gpt-4o", "claude-sonnet"]
    assert routes[1]["fallbacks"] == {"general": ["claude-sonnet"]}
    providers = {p["name"]: p for p in service.list_objects(store, "provider", project["id"])}
    secret = service.provider_secret(store, project["id"], providers["openai"]["id"])
    assert secret == "value-of-openai_api_key"

    status, _, err = run(capsys, "import", "litellm", fixture, "--into-store",
                         "--store", store_url, "--project", "support")  # fmt: skip
    assert status == 1
    assert "--replace" in err
    assert "route 'chat'" in err
    assert "provider 'openai'" in err
    again = ("import", "litellm", fixture, "--into-store", "--store", store_url)
    status, out, err = run(capsys, *again, "--project", project["id"], "--replace")
    assert status == 0, err
    assert "routes: 0 created, 3 updated" in out
    assert len(service.list_objects(store, "route", project["id"])) == 3
    store.close()


def test_import_refuses_when_a_variable_is_not_set(
    store_url: str, capsys: pytest.CaptureFixture[str], secret_env: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """A ${VAR} the environment lacks refuses the import before anything is written, naming
    the variable and where it is used."""
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    fixture = f"{FIXTURES}/openai_anthropic_failover.yaml"
    status, _, err = run(capsys, "import", "litellm", fixture, "--into-store",
                         "--store", store_url)  # fmt: skip
    assert status == 1
    assert "ANTHROPIC_API_KEY" in err
    assert "providers[1].api_key" in err
    store = opened(store_url)
    migrate(store)
    assert service.list_projects(store) == []
    store.close()


def _stored_project(store: Store, project_id: str) -> dict[str, list[dict[str, Any]]]:
    """The project's providers, routes, bindings and policies, without their time stamps."""
    kinds: tuple[service.ObjectKind, ...] = ("provider", "route", "binding", "policy")
    return {
        kind: [
            {k: v for k, v in found.items() if k not in ("created_at", "updated_at")}
            for found in service.list_objects(store, kind, project_id)
        ]
        for kind in kinds
    }


def _project_with_a_clash(store: Store) -> str:
    """A project `default` whose provider `openai` the import replaces, and whose route serves
    `claude-sonnet`: the import's last route is refused after four writes."""
    pid: str = service.create_project(store, {"name": "default"})["id"]
    service.create_object(store, "provider", pid,
                          {"name": "openai", "kind": "mock", "api_key": "the-old-key"})  # fmt: skip
    service.create_object(store, "provider", pid, {"name": "local", "kind": "mock"})
    route = {"name": "other", "models": ["claude-sonnet"], "targets": [{"provider": "local"}]}
    service.create_object(store, "route", pid, route)
    return pid


def test_an_import_that_fails_midway_leaves_the_store_unchanged(
    store_url: str, capsys: pytest.CaptureFixture[str], secret_env: None
) -> None:
    """With --store, a write refused after others were made (a route the project's validator
    refuses, once a provider was replaced and two routes created) rolls every write back, the
    audit rows and version bump included, and the error names the route and the rule."""
    store = opened(store_url)
    migrate(store)
    pid = _project_with_a_clash(store)
    before, version = _stored_project(store, pid), service.current_version(store)
    fixture = f"{FIXTURES}/openai_anthropic_failover.yaml"
    status, out, err = run(capsys, "import", "litellm", fixture, "--into-store",
                           "--store", store_url, "--replace")  # fmt: skip
    assert status == 1, out
    assert "writing route 'claude-sonnet' (routes[2] of the import) failed" in err
    assert "routes[3].name" in err
    assert '"claude-sonnet"' in err
    assert "nothing was written" in err
    assert _stored_project(store, pid) == before
    assert service.provider_secret(store, pid, before["provider"][0]["id"]) == "the-old-key"
    assert service.current_version(store) == version
    status, _, err = run(capsys, "import", "litellm", fixture, "--into-store",
                         "--store", store_url, "--project", "fresh")  # fmt: skip
    assert status == 0, err
    store.close()


def test_an_import_that_fails_midway_through_the_admin_api_is_undone(
    store: Store, capsys: pytest.CaptureFixture[str], secret_env: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """With --url, where each write commits on its own, the writes made before the refused one
    are undone: created objects deleted, the replaced provider's fields restored; its replaced
    key cannot be read back, and the error says so."""
    monkeypatch.setenv("TURNOUT_ADMIN_KEY", ADMIN_KEY)
    pid = _project_with_a_clash(store)
    before = _stored_project(store, pid)
    fixture = f"{FIXTURES}/openai_anthropic_failover.yaml"
    with running_in_thread(StoreContext(store, file_config())) as url:
        status, out, err = run(capsys, "import", "litellm", fixture, "--into-store",
                               "--url", url, "--project", pid, "--replace")  # fmt: skip
    assert status == 1, out
    assert '"claude-sonnet"' in err
    assert "after 4 writes; they were undone" in err
    assert "openai.api_key" in err
    assert _stored_project(store, pid) == before


def test_import_through_the_admin_api(
    store: Store, capsys: pytest.CaptureFixture[str], secret_env: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """Imported with --url, the routes are stored in the new project and listed by the store."""
    monkeypatch.setenv("TURNOUT_ADMIN_KEY", ADMIN_KEY)
    fixture = f"{FIXTURES}/fallbacks.yaml"
    with running_in_thread(StoreContext(store, file_config())) as url:
        status, out, err = run(capsys, "import", "litellm", fixture, "--into-store",
                               "--url", url, "--project", "migrated")  # fmt: skip
    assert status == 0, err
    assert "(created)" in out
    project = next(p for p in service.list_projects(store) if p["name"] == "migrated")
    assert service.list_objects(store, "route", project["id"])


def test_import_reports_the_validators_problems_and_a_missing_secret_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], secret_env: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """A route the project's validator refuses (its model already served by a stored route)
    stops the import naming the problem's path; without TURNOUT_SECRET_KEY nothing is written."""
    url = f"sqlite:///{tmp_path}/v.db"
    store = opened(url)
    migrate(store)
    pid = service.create_project(store, {"name": "default"})["id"]
    service.create_object(store, "provider", pid, {"name": "local", "kind": "mock"})
    route = {"name": "other", "models": ["chat"], "targets": [{"provider": "local"}]}
    service.create_object(store, "route", pid, route)
    fixture = f"{FIXTURES}/openai_anthropic_failover.yaml"
    status, _, err = run(capsys, "import", "litellm", fixture, "--into-store", "--store", url)
    assert status == 1
    assert "routes[" in err
    assert '"chat"' in err
    assert "nothing was written" in err
    assert [r["name"] for r in service.list_objects(store, "route", pid)] == ["other"]
    monkeypatch.delenv("TURNOUT_SECRET_KEY")
    status, _, err = run(capsys, "import", "litellm", fixture, "--into-store", "--store", url,
                         "--project", "fresh")  # fmt: skip
    assert status == 1
    assert "TURNOUT_SECRET_KEY is not set" in err
    assert [p["name"] for p in service.list_projects(store)] == ["default"]
    store.close()
