"""Loading a configuration with the cyclic garbage collector paused."""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING

import pytest

from turnout.config.gc_pause import collection_paused
from turnout.config.load import load_config

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


@pytest.fixture
def collector_running() -> Iterator[None]:
    """The collector runs before the test and again after it, whatever the test did."""
    gc.enable()
    yield
    gc.enable()


def test_paused_inside_and_running_after(collector_running: None) -> None:
    """The block runs with the collector off; it runs again after the block."""
    with collection_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_running_again_after_an_exception(collector_running: None) -> None:
    """An exception in the block still turns the collector back on."""
    with pytest.raises(RuntimeError), collection_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off(collector_running: None) -> None:
    """A pause never turns on a collector someone else turned off (nested pauses too)."""
    gc.disable()
    with collection_paused(), collection_paused():
        pass
    assert not gc.isenabled()


def test_load_config_leaves_the_collector_running(collector_running: None, tmp_path: Path) -> None:
    """Loading a file, good or bad, leaves the collector running."""
    good = tmp_path / "good.yaml"
    good.write_text("providers:\n  - {name: m, kind: mock}\n")
    assert load_config(good).providers[0].name == "m"
    assert gc.isenabled()
    bad = tmp_path / "bad.yaml"
    bad.write_text("providers: [\n")
    with pytest.raises(Exception, match="invalid YAML"):
        load_config(bad)
    assert gc.isenabled()
