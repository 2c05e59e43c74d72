"""Loading a configuration with the cyclic garbage collector paused.

Parsing and building a large configuration (thousands of routes or keys) allocates hundreds of
thousands of objects that all live on. Each allocation burst triggers a collection, and the
oldest generation's collections walk every object made so far, so with the collector running the
work grows faster than the file: at 100,000 keys about half the load time was collection that
found nothing to free. Pausing it for the load keeps the time in proportion to the file.

Rule 1: the collector is paused only if it was running, and running again afterwards whatever
happened inside (also on an exception); nested pauses are no-ops.
Rule 2: nothing collectable is lost: the cycles made during the pause are collected at the next
collection after it.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["collection_paused"]


@contextmanager
def collection_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for the block (Rule 1)."""
    running = gc.isenabled()
    if running:
        gc.disable()
    try:
        yield
    finally:
        if running:
            gc.enable()
