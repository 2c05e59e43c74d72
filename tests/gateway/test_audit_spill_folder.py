"""Where a serving process spills the usage its store could not take: the configured folder
(relative to the config file's folder), else beside an SQLite store file, else `turnout-spill`
in the config file's folder."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.engine import make_url

from turnout.gateway.server.audit import spill_folder


def test_a_configured_folder_is_resolved_against_the_config_folder(tmp_path: Path) -> None:
    """`audit_spill_dir: spill` beside `/conf/turnout.yaml` is `/conf/spill`; absolute stays."""
    url = make_url("sqlite:////data/turnout.db")
    assert spill_folder(url, "spill", tmp_path) == tmp_path / "spill"
    assert spill_folder(url, "/var/spill", tmp_path) == Path("/var/spill")


def test_an_sqlite_file_spills_beside_itself(tmp_path: Path) -> None:
    """`sqlite:///…/turnout.db` spills to `turnout.db-spill` next to it."""
    url = make_url(f"sqlite:///{tmp_path}/db/turnout.db")
    assert spill_folder(url, None, Path("/elsewhere")) == tmp_path / "db" / "turnout.db-spill"


def test_postgresql_and_memory_spill_in_the_config_folder(tmp_path: Path) -> None:
    """A store without a file spills to `turnout-spill` in the config file's folder."""
    for url in ("postgresql://u@db:5432/turnout", "sqlite:///:memory:"):
        assert spill_folder(make_url(url), None, tmp_path) == tmp_path / "turnout-spill"
