"""Load a configuration file: YAML, `${VAR}` expansion, shape validation with every error's path.

`load_config(path)` returns a frozen `FileConfig` or raises `ConfigError` listing every problem
at once, each as `(path, message)` with paths like `routes[2].targets[0].max_retries`. Unknown
keys get the nearest valid key suggested. Cross-object rules are applied by
`turnout.config.rules.check_config`, which `load_config` runs after the shape is valid.
"""

from __future__ import annotations

import difflib
import os
import re
import types
import typing
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_camel

from turnout.errors import ConfigError
from turnout.schema import FileConfig

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from pydantic_core import ErrorDetails

__all__ = ["expand_env", "format_path", "load_config", "parse_config"]

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def format_path(loc: Sequence[int | str]) -> str:
    """`('routes', 2, 'targets', 0, 'max_retries')` -> `routes[2].targets[0].max_retries`."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def expand_env(
    value: Any, env: Mapping[str, str], errors: list[tuple[str, str]], path: str = ""
) -> Any:
    """Replace `${VAR}` in every string of `value`; a missing variable is an error naming it."""
    if isinstance(value, str):

        def substitute(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in env:
                errors.append((path or "(root)", f"environment variable {name} is not set"))
                return ""
            return env[name]

        return _VAR.sub(substitute, value)
    if isinstance(value, dict):
        return {
            k: expand_env(v, env, errors, f"{path}.{k}" if path else str(k))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [expand_env(v, env, errors, f"{path}[{i}]") for i, v in enumerate(value)]
    return value


def _model_at(loc: Sequence[int | str]) -> type[BaseModel] | None:
    """The pydantic model class that the object at `loc` is validated by."""
    annotation: Any = FileConfig
    for part in loc:
        annotation = _unwrap(annotation, by_index=isinstance(part, int))
        if isinstance(part, int):
            continue
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return None
        field = _field_named(annotation, part)
        if field is None:
            return None
        annotation = field
    annotation = _unwrap(annotation, by_index=False)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _field_named(model: type[BaseModel], name: str) -> Any:
    for field_name, info in model.model_fields.items():
        if name in (field_name, info.alias):
            return info.annotation
    return None


def _unwrap(annotation: Any, *, by_index: bool) -> Any:
    """Strip Optional/Union-with-None, and step into tuple/list/dict items when indexing."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        models = [
            a for a in typing.get_args(annotation) if a is not type(None) and not _is_scalar(a)
        ]
        annotation = models[0] if models else annotation
        origin = typing.get_origin(annotation)
    if by_index and origin in (tuple, list):
        return typing.get_args(annotation)[0]
    if origin is dict:
        return typing.get_args(annotation)[1]
    return annotation


def _is_scalar(annotation: Any) -> bool:
    return annotation in (str, int, float, bool)


def _valid_keys(model: type[BaseModel]) -> list[str]:
    return list(model.model_fields)


def _suggest(key: str, model: type[BaseModel] | None) -> str:
    if model is None:
        return ""
    names = _valid_keys(model)
    camel = {to_camel(n).lower(): n for n in names}
    close = difflib.get_close_matches(key, names, n=1, cutoff=0.6) or difflib.get_close_matches(
        key.lower(), list(camel), n=1, cutoff=0.6
    )
    if not close:
        return f" (valid keys: {', '.join(names)})"
    best = camel.get(close[0], close[0])
    return f"; did you mean '{best}'?"


def _describe(error: ErrorDetails) -> tuple[str, str]:
    loc = error["loc"]
    path = format_path(loc)
    kind = error["type"]
    if kind == "extra_forbidden":
        key = str(loc[-1])
        return path, f"unknown key '{key}'{_suggest(key, _model_at(loc[:-1]))}"
    if kind == "missing":
        return path, "is required"
    if kind == "too_short":
        least = error.get("ctx", {}).get("min_length", 1)
        return path, f"must have at least {least} item{'s' if least != 1 else ''}"
    if kind == "literal_error":
        expected = error.get("ctx", {}).get("expected", "")
        return path, f"must be one of {expected} (got {error['input']!r})"
    return path, _lowercase_first(error["msg"])


def _lowercase_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def _shape_errors(exc: ValidationError) -> list[tuple[str, str]]:
    details = exc.errors()
    # An invalid item makes its list look "too short" too; that echo would only confuse.
    nested = {tuple(d["loc"][:i]) for d in details for i in range(1, len(d["loc"]))}
    return [
        _describe(d)
        for d in details
        if not (d["type"] == "too_short" and tuple(d["loc"]) in nested)
    ]


def parse_config(data: Any, *, env: Mapping[str, str] | None = None) -> FileConfig:
    """Validate an already-parsed document (a dict) into a `FileConfig`, or raise ConfigError."""
    from turnout.config.rules import check_config  # noqa: PLC0415 - rules import this module

    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError("the configuration must be a mapping", [("(root)", "must be a mapping")])
    errors: list[tuple[str, str]] = []
    data = expand_env(data, os.environ if env is None else env, errors)
    try:
        config = FileConfig.model_validate(data)
    except ValidationError as exc:
        errors.extend(_shape_errors(exc))
        raise _config_error(errors) from None
    errors.extend(check_config(config))
    if errors:
        raise _config_error(errors)
    return config


def load_config(path: str | Path, *, env: Mapping[str, str] | None = None) -> FileConfig:
    """Read and validate the YAML (or JSON) configuration file at `path`."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"cannot read {file}: {exc.strerror}", [(str(file), "unreadable")]
        ) from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(file)"
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(
            f"{file}: invalid YAML at {where}: {problem}", [(where, problem)]
        ) from None
    return parse_config(data, env=env)


def _config_error(errors: list[tuple[str, str]]) -> ConfigError:
    lines = "\n".join(f"  {path}: {message}" for path, message in errors)
    count = len(errors)
    noun = "error" if count == 1 else "errors"
    return ConfigError(f"invalid configuration ({count} {noun}):\n{lines}", errors)
