"""The deployment shapes the shape suite runs its scenarios over, and the rule that picks them.

Every combination of shared state (memory or Redis), store (SQLite or PostgreSQL), workers
(one process, or `--workers 2`) and replicas (one or three) is a shape, except two kinds:

- SQLite with three replicas: a SQLite file is the store of one machine; replicas (processes
  each started on their own, typically on several machines) share a PostgreSQL store (see
  docs/replicas.md). Several workers of one process on one SQLite file stay in the matrix.
- three replicas of two workers each: each worker is a replica of its own, so this is six
  replicas; the two seams it combines (workers sharing one listening socket, replicas on
  sockets of their own) are each in the matrix already.

That leaves ten shapes.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Literal

__all__ = ["SHAPES", "Shape", "is_tested"]

State = Literal["memory", "redis"]
Store = Literal["sqlite", "postgresql"]


@dataclass(frozen=True, slots=True)
class Shape:
    """One deployment: `replicas` `turnout serve` processes, each with `workers` workers, on
    one `store` and one `state`."""

    state: State
    store: Store
    workers: int
    replicas: int

    @property
    def id(self) -> str:
        """A short name for test ids: `redis-postgresql-w2-r1`."""
        return f"{self.state}-{self.store}-w{self.workers}-r{self.replicas}"

    @property
    def processes(self) -> int:
        """The serving processes in all (each worker counts)."""
        return self.workers * self.replicas


def is_tested(shape: Shape) -> bool:
    """Whether `shape` is in the matrix (the module docstring says why two kinds are not)."""
    if shape.replicas > 1 and shape.store == "sqlite":
        return False
    return not (shape.replicas > 1 and shape.workers > 1)


_STATES: tuple[State, ...] = ("memory", "redis")
_STORES: tuple[Store, ...] = ("sqlite", "postgresql")

SHAPES: tuple[Shape, ...] = tuple(
    shape
    for state, store, workers, replicas in itertools.product(_STATES, _STORES, (1, 2), (1, 3))
    if is_tested(shape := Shape(state, store, workers, replicas))
)
