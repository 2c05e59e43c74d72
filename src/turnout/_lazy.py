"""Names a package loads on first use (PEP 562), so importing the package, or one module of it,
does not load every module its public names come from."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, MutableMapping

__all__ = ["lazy_names"]


def lazy_names(
    namespace: MutableMapping[str, Any], homes: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module `__getattr__` and `__dir__` of the package whose globals are `namespace`:
    each name of `homes` is imported from its module (a full dotted name) the first time it is
    used, then kept in `namespace`; any other name is an AttributeError."""
    package = namespace["__name__"]

    def getattr_(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted({*namespace, *namespace.get("__all__", ())})

    return getattr_, dir_
