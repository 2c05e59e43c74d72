"""Which changed settings a reload cannot apply: the listener's address, tracing, the store,
the state store and the audit writer's settings, by dotted path, in a fixed order; every other
change, none."""

from __future__ import annotations

from typing import Any

from turnout.config.load import parse_config
from turnout.config.restart import RESTART_FIELDS, restart_required

BASE: dict[str, Any] = {
    "providers": [{"name": "m", "kind": "mock"}],
    "routes": [{"name": "main", "models": ["gpt-4o-mini"], "targets": [{"provider": "m"}]}],
}


def _file(**changes: Any) -> Any:
    return parse_config({**BASE, **changes}, env={})


def test_a_changed_port_needs_a_restart() -> None:
    """`server.port` changed is named; so is `server.host` beside it, in the fixed order."""
    before = _file(server={"port": 4000})
    after = _file(server={"port": 4001, "host": "0.0.0.0"})  # noqa: S104 - a value compared
    assert restart_required(before, after) == ("server.host", "server.port")


def test_store_and_state_changes_are_named_without_their_values() -> None:
    """A new store or state URL is named by its path only (it may hold a password)."""
    before = _file()
    after = _file(store="postgresql://turnout:s3cret@db/turnout", state="redis://r:6379/0")
    assert restart_required(before, after) == ("store", "state")


def test_changes_a_reload_applies_need_no_restart() -> None:
    """Routes, auth and the server's limits change on a reload: nothing is named."""
    before = _file()
    after = _file(
        server={"auth": "open", "max_body_bytes": 1024},
        routes=[{"name": "main", "models": ["gpt-4o"], "targets": [{"provider": "m"}]}],
    )
    assert restart_required(before, after) == ()


def test_the_same_file_needs_no_restart() -> None:
    """A file compared with itself names nothing (every listed path reads a value)."""
    config = _file(store="sqlite:///turnout.db", audit_spill_dir="spill")
    assert len(RESTART_FIELDS) == 7
    assert restart_required(config, config) == ()
