"""`store` and `admin_keys`: the URL forms accepted, a relative SQLite path beside the file,
a malformed admin key entry; errors name the field."""

from __future__ import annotations

from typing import TYPE_CHECKING

from turnout.config._control_rules import store_url
from turnout.config.rules import check_config
from turnout.schema import FileConfig

if TYPE_CHECKING:
    from pathlib import Path


def _config(**data: object) -> FileConfig:
    return FileConfig.model_validate({"providers": [{"name": "p", "kind": "mock"}], **data})


def test_store_urls_of_both_backends_are_accepted_and_others_named() -> None:
    """sqlite:/// and postgresql:// load; another scheme is an error on `store` without the
    rest of the URL (it may hold a password)."""
    for url in ("sqlite:///turnout.db", "postgresql://u:pw@db/turnout"):
        assert check_config(_config(store=url)) == []
    errors = check_config(_config(store="mysql://u:hunter2@db/x"))
    assert [path for path, _ in errors] == ["store"]
    assert "mysql" in errors[0][1]
    assert "hunter2" not in errors[0][1]


def test_a_relative_sqlite_path_sits_beside_the_file(tmp_path: Path) -> None:
    """`sqlite:///turnout.db` resolves against the given folder; absolute and memory stay."""
    config = _config()
    assert store_url(config, tmp_path) == f"sqlite:///{tmp_path.resolve()}/turnout.db"
    absolute = _config(store="sqlite:////var/lib/t.db")
    assert store_url(absolute, tmp_path) == "sqlite:////var/lib/t.db"
    postgres = _config(store="postgresql://db/t")
    assert store_url(postgres, tmp_path) == "postgresql://db/t"


def test_a_bad_admin_key_entry_is_named() -> None:
    """A malformed hash or an empty entry is an error naming its index, never its value."""
    errors = check_config(_config(admin_keys=["ok-admin-key", "sha256:abc", ""]))
    assert [path for path, _ in errors] == ["admin_keys[1]", "admin_keys[2]"]
