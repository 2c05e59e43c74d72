"""Validate what can be validated around the broken parts of a file, so one run lists every error.

Rule 1: an object of a top-level list (a provider, a route, a key …) with a shape error is left
out whole; any other top-level key with one falls back to its default. The cross-object rules
then run on the valid rest.
Rule 2: what they report names positions in the file as written: when the file's `routes[1]`
was left out, the rest's `routes[1]` is reported as the file's `routes[2]`, in paths and in
messages alike ("already taken by providers[3]").
Rule 3: a reference to an object that was left out (a target naming a provider whose own entry
is broken) is not reported: the object's own errors already are, and once they are fixed the
reference may well be right.
Rule 4: when a whole top-level list is broken (`routes: 5`), the rules do not run: every
reference into it would be a false error.
"""

from __future__ import annotations

import re
import typing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_camel

from turnout.schema import FileConfig

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from pydantic_core import ErrorDetails

__all__ = ["ValidRest", "valid_rest"]

Problems = list[tuple[str, str]]


def _object_lists() -> frozenset[str]:
    """The top-level keys that hold a list of objects, in both spellings."""
    found: set[str] = set()
    for name, info in FileConfig.model_fields.items():
        args = typing.get_args(info.annotation)
        if args and isinstance(args[0], type) and issubclass(args[0], BaseModel):
            found.update((name, to_camel(name)))
    return frozenset(found)


_OBJECT_LISTS = _object_lists()
_POSITION = re.compile(r"(?<![\w.\]])(?P<list>\w+)\[(?P<index>\d+)\]")
"""A top-level list's item in a path or a message: `routes[2]`, not `keys[0].routes[2]`."""
_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


@dataclass(frozen=True, slots=True)
class ValidRest:
    """The valid rest of a file: `config`, and how to report its problems against the file."""

    config: FileConfig
    positions: Mapping[str, Sequence[int]]
    """Top-level list -> the file's index of each item kept, in order."""
    left_out: frozenset[str]
    """Names of the objects left out."""
    document: Mapping[str, Any]
    """The file as parsed, to read the value a problem is about."""

    def file_problems(self, problems: Problems) -> Problems:
        """`problems` found in the rest, at the file's positions (Rule 2), without those about
        a reference to an object left out (Rule 3)."""
        found: Problems = []
        for path, message in problems:
            at = self._in_file(path)
            if not self._names_left_out(at):
                found.append((at, self._in_file(message)))
        return found

    def _in_file(self, text: str) -> str:
        def position(match: re.Match[str]) -> str:
            kept = self.positions.get(match["list"])
            index = int(match["index"])
            if kept is None or index >= len(kept):
                return match[0]
            return f"{match['list']}[{kept[index]}]"

        return _POSITION.sub(position, text)

    def _names_left_out(self, path: str) -> bool:
        if not self.left_out or path.endswith(".name"):
            return False
        value = _value_at(self.document, path)
        return isinstance(value, str) and value in self.left_out


def valid_rest(document: Mapping[str, Any], details: Sequence[ErrorDetails]) -> ValidRest | None:
    """The rest of `document` once what `details` found broken is left out (Rule 1), or None
    when nothing useful is left to check (Rule 4)."""
    broken_items: dict[str, set[int]] = {}
    broken_keys: set[str] = set()
    for detail in details:
        loc = detail["loc"]
        if not loc or not isinstance(loc[0], str):
            return None
        key = loc[0]
        if key in _OBJECT_LISTS:
            if len(loc) < 2 or not isinstance(loc[1], int):
                return None
            broken_items.setdefault(key, set()).add(loc[1])
        else:
            broken_keys.add(key)
    rest = {key: value for key, value in document.items() if key not in broken_keys}
    positions: dict[str, list[int]] = {}
    left_out: set[str] = set()
    for key, broken in broken_items.items():
        items = document[key]
        positions[key] = [i for i in range(len(items)) if i not in broken]
        rest[key] = [items[i] for i in positions[key]]
        left_out.update(_name_of(items[i]) for i in broken)
    left_out.discard("")
    try:
        config = FileConfig.model_validate(rest)
    except ValidationError:
        return None  # a rule of the shape spans objects; nothing is left to check safely
    return ValidRest(config, positions, frozenset(left_out), document)


def _name_of(item: object) -> str:
    if isinstance(item, dict):
        name = item.get("name")
        if isinstance(name, str):
            return name.strip()
    return ""


def _value_at(document: Any, path: str) -> Any:
    """The value at `path` (`routes[2].targets[0].provider`), or None where there is none."""
    value = document
    for key, index in _PART.findall(path):
        if index:
            if not isinstance(value, list) or int(index) >= len(value):
                return None
            value = value[int(index)]
        elif isinstance(value, dict) and key in value:
            value = value[key]
        else:
            return None
    return value
