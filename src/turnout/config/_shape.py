"""Shape errors in plain words: the schema validator's error details as `(path, message)`.

A path names the file's keys as written (`routes[2].targets[0].max_retries`), never the
validator's own markers (the member tags of a "this or that" field, the marker of a bad
mapping key). A message says what the value must be in the words of a YAML file (a list, a
mapping, a whole number, text, true or false), never a programming language's type names,
and it never repeats a text value, which may be a secret.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel
from pydantic.alias_generators import to_camel

from turnout.schema import FileConfig

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pydantic_core import ErrorDetails

__all__ = ["describe_errors", "format_path", "model_at"]

Problems = list[tuple[str, str]]

_KEY_MARKER = "[key]"
"""Where the validator puts a mapping key that is not allowed, after the key itself."""

_KINDS: dict[str, str] = {
    "list_type": "a list",
    "tuple_type": "a list",
    "set_type": "a list",
    "frozen_set_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_parsing_size": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "finite_number": "a finite number",
    "string_type": "text",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "none_required": "null",
}
"""Type errors: what the value must be."""
_SHAPES = frozenset({"a list", "a mapping", "text"})
"""Kinds of field that may hold a secret: a wrong value there is named by its kind only."""

_BOUNDS: dict[str, tuple[str, str]] = {
    "greater_than": ("gt", "must be greater than {}"),
    "greater_than_equal": ("ge", "must be at least {}"),
    "less_than": ("lt", "must be less than {}"),
    "less_than_equal": ("le", "must be at most {}"),
}
"""Range errors: the bound's name in the error's context, and the rule."""


def format_path(loc: Sequence[int | str]) -> str:
    """`('routes', 2, 'targets', 0, 'max_retries')` -> `routes[2].targets[0].max_retries`."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def describe_errors(details: Sequence[ErrorDetails]) -> Problems:
    """Every error of one validation as `(path, message)`, in the validator's order.

    The errors a value gets for each form of a "this or that" field (text or a list) become
    one message naming both forms; an invalid item no longer makes its list "too short".
    """
    # An invalid item makes its list look "too short" too; that echo would only confuse.
    nested = {tuple(d["loc"][:i]) for d in details for i in range(1, len(d["loc"]))}
    grouped: dict[tuple[int | str, ...], list[tuple[ErrorDetails, _Place]]] = {}
    for detail in details:
        if detail["type"] == "too_short" and tuple(detail["loc"]) in nested:
            continue
        place = _place(detail["loc"])
        grouped.setdefault(place.loc, []).append((detail, place))
    problems: Problems = []
    for loc, members in grouped.items():
        forms = [d for d, place in members if place.is_form]
        if len(forms) > 1:
            problems.append((format_path(loc), _either(forms)))
        problems.extend(
            (format_path(loc), _message(d, place))
            for d, place in members
            if not (place.is_form and len(forms) > 1)
        )
    return problems


# ---- where an error is ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Place:
    """An error's location as the file spells it, and what the validator's markers said."""

    loc: tuple[int | str, ...]
    annotation: Any
    is_form: bool = False
    """The error is about one form of a "this or that" field."""
    is_key: bool = False
    """The error is about a mapping key, not its value."""


def _place(loc: Sequence[int | str]) -> _Place:
    """Walk the schema along `loc`, dropping the validator's markers."""
    annotation: Any = FileConfig
    kept: list[int | str] = []
    is_form = is_key = False
    in_mapping = False  # the last part was a key of a mapping
    for part in loc:
        annotation = _plain(annotation)
        if part == _KEY_MARKER and in_mapping:
            is_key = True
            continue
        if _is_choice(annotation):
            is_form, annotation = True, Any
            continue
        kept.append(part)
        in_mapping = typing.get_origin(annotation) is dict
        annotation = _step(annotation, part)
    return _Place(tuple(kept), _plain(annotation), is_form, is_key)


def model_at(loc: Sequence[int | str]) -> type[BaseModel] | None:
    """The model the object at `loc` (a path as the file spells it) is validated by."""
    annotation = _place(loc).annotation
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _step(annotation: Any, part: int | str) -> Any:
    origin = typing.get_origin(annotation)
    if isinstance(part, int):
        return typing.get_args(annotation)[0] if origin in (tuple, list) else Any
    if origin is dict:
        return typing.get_args(annotation)[1]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        for name, info in annotation.model_fields.items():
            if part in (name, info.alias, to_camel(name)):
                return info.annotation
    return Any


def _plain(annotation: Any) -> Any:
    """Without `Annotated` and without a `None` member (null is allowed, not another form)."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is Annotated:
            annotation = typing.get_args(annotation)[0]
            continue
        if origin in (typing.Union, types.UnionType):
            members = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(members) == 1:
                annotation = members[0]
                continue
        return annotation


def _is_choice(annotation: Any) -> bool:
    return typing.get_origin(annotation) in (typing.Union, types.UnionType)


# ---- what went wrong --------------------------------------------------------------------------


def _message(detail: ErrorDetails, place: _Place) -> str:
    kind = detail["type"]
    ctx: dict[str, Any] = dict(detail.get("ctx") or {})
    if place.is_key:
        return _key_message(place, ctx)
    if kind == "extra_forbidden":
        key = str(place.loc[-1])
        return f"unknown key '{key}'{_suggest(key, model_at(place.loc[:-1]))}"
    if kind == "missing":
        return "is required"
    if kind in _KINDS:
        word = _KINDS[kind]
        got = _kind(detail["input"]) if word in _SHAPES else _shown(detail["input"])
        return f"must be {word} (got {got})"
    if kind in _BOUNDS:
        bound, rule = _BOUNDS[kind]
        return f"{rule.format(_number(ctx.get(bound)))} (got {_shown(detail['input'])})"
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected', '')} (got {_shown(detail['input'])})"
    return _sized(kind, ctx) or _fallback(detail["msg"])


def _sized(kind: str, ctx: dict[str, Any]) -> str | None:
    """Length rules; a text value is never repeated (it may be a secret)."""
    if kind == "string_too_short":
        least = ctx.get("min_length", 1)
        return "may not be empty" if least == 1 else f"must be at least {least} characters long"
    if kind == "string_too_long":
        return f"must be at most {ctx.get('max_length')} characters long"
    if kind in ("too_short", "too_long"):
        count = ctx.get("min_length" if kind == "too_short" else "max_length", 1)
        least = "at least" if kind == "too_short" else "at most"
        return f"must have {least} {count} item{'s' if count != 1 else ''}"
    return None


def _either(forms: Sequence[ErrorDetails]) -> str:
    """One message for a value that fits none of a field's forms."""
    words = list(dict.fromkeys(_KINDS.get(d["type"], "another form") for d in forms))
    return f"must be {' or '.join(words)} (got {_kind(forms[0]['input'])})"


def _key_message(place: _Place, ctx: dict[str, Any]) -> str:
    key = str(place.loc[-1])
    allowed = re.findall(r"'([^']*)'", str(ctx.get("expected", "")))
    if not allowed:
        return f"key '{key}' is not allowed"
    hint = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
    suggestion = f"; did you mean '{hint[0]}'?" if hint else ""
    return f"unknown key '{key}' (valid keys: {', '.join(allowed)}){suggestion}"


def _suggest(key: str, model: type[BaseModel] | None) -> str:
    if model is None:
        return ""
    names = list(model.model_fields)
    camel = {to_camel(n).lower(): n for n in names}
    close = difflib.get_close_matches(key, names, n=1, cutoff=0.6) or difflib.get_close_matches(
        key.lower(), list(camel), n=1, cutoff=0.6
    )
    if not close:
        return f" (valid keys: {', '.join(names)})"
    best = camel.get(close[0], close[0])
    return f"; did you mean '{best}'?"


def _shown(value: object) -> str:
    """A number, a boolean or null as a YAML file writes it; anything else by its kind."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _number(value)
    if isinstance(value, str):
        return repr(value)
    return _kind(value)


def _kind(value: object) -> str:
    """What kind of value `value` is, without showing it (it may be a secret)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return "a value of another kind"


def _number(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _fallback(text: str) -> str:
    """A rule without its own wording: the validator's, in the file's words."""
    text = text.replace("Input should be", "must be").replace("input should be", "must be")
    return text[:1].lower() + text[1:]
