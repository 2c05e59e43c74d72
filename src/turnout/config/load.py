"""Load a configuration file: YAML, `${VAR}` expansion, shape validation with every error's path.

`load_config(path)` returns a frozen `FileConfig` or raises `ConfigError` listing every problem
at once, each as `(path, message)` with paths like `routes[2].targets[0].max_retries`. Unknown
keys get the nearest valid key suggested. Cross-object rules are applied by
`turnout.config.rules.check_config`; when some objects have shape errors, they run on the
valid rest (see `turnout.config._partial`), so one run reports every error.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import ValidationError

from turnout.config._partial import valid_rest
from turnout.config._shape import describe_errors, format_path
from turnout.config.gc_pause import collection_paused
from turnout.errors import ConfigError
from turnout.schema import FileConfig

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["expand_env", "format_path", "load_config", "parse_config"]

# libyaml's parser when PyYAML was built with it (about three times faster on a large file), else
# the pure-Python one; both are the safe loader: plain data, no Python objects.
_SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_env(
    value: Any,
    env: Mapping[str, str],
    errors: list[tuple[str, str]],
    path: str = "",
    *,
    unset: set[str] | None = None,
) -> Any:
    """Replace `${VAR}` in every string of `value`.

    A variable missing from `env` keeps its `${VAR}` text (so that what surrounds it can still
    be checked) and is an error naming it; when `unset` is given it is not an error, and the
    path of the string joins `unset` instead.
    """
    if isinstance(value, str):

        def substitute(match: re.Match[str]) -> str:
            name = match.group(1)
            if name in env:
                return env[name]
            if unset is not None:
                unset.add(path or "(root)")
            else:
                errors.append((path or "(root)", f"environment variable {name} is not set"))
            return match.group(0)

        return _VAR.sub(substitute, value)
    if isinstance(value, dict):
        return {
            k: expand_env(v, env, errors, f"{path}.{k}" if path else str(k), unset=unset)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [
            expand_env(v, env, errors, f"{path}[{i}]", unset=unset) for i, v in enumerate(value)
        ]
    return value


def parse_config(
    data: Any, *, env: Mapping[str, str] | None = None, read_env: bool = True
) -> FileConfig:
    """Validate an already-parsed document (a dict) into a `FileConfig`, or raise ConfigError.

    `${VAR}` reads `env` (default: the process environment). With `read_env=False` no variable
    is read: each keeps its `${VAR}` text and is not an error, so a file can be checked without
    its secrets. Either way, nothing is reported about a value that holds an unread variable
    beyond that it is not set: its real value is unknown.
    """
    if data is None:
        rule = "is empty: a configuration needs at least one provider or route"
        raise ConfigError(f"the configuration {rule}", [("(root)", rule)])
    if not isinstance(data, dict):
        rule = f"must be a mapping of keys to values (got {_kind_of(data)})"
        raise ConfigError(f"the configuration {rule}", [("(root)", rule)])
    errors: list[tuple[str, str]] = []
    unset: set[str] = set()
    if read_env:
        data = expand_env(data, os.environ if env is None else env, errors)
        unset = {path for path, _ in errors}
    else:
        data = expand_env(data, {}, errors, unset=unset)
    config, problems = _validate(data)
    known = [(path, rule) for path, rule in problems if not _is_within(path, unset)]
    errors.extend(known)
    if errors or config is None:
        raise _config_error(errors or problems)
    return config


def _validate(data: dict[str, Any]) -> tuple[FileConfig | None, list[tuple[str, str]]]:
    """The configuration (or its valid rest, when some objects have shape errors) and every
    problem found: the shape errors, then the cross-object rules."""
    from turnout.config.rules import check_config  # noqa: PLC0415 - rules import this module

    try:
        config = FileConfig.model_validate(data)
    except ValidationError as exc:
        details = exc.errors()
        problems = describe_errors(details)
        rest = valid_rest(data, details)
        if rest is None:
            return None, problems
        return rest.config, problems + rest.file_problems(check_config(rest.config))
    return config, check_config(config)


def _is_within(path: str, roots: set[str]) -> bool:
    return any(path == root or path.startswith((f"{root}.", f"{root}[")) for root in roots)


def _kind_of(data: object) -> str:
    if isinstance(data, list):
        return "a list"
    if isinstance(data, str):
        return "text"
    return "a single value"


def load_config(
    path: str | Path, *, env: Mapping[str, str] | None = None, read_env: bool = True
) -> FileConfig:
    """Read and validate the YAML (or JSON) configuration file at `path`; `env` and
    `read_env` as for `parse_config`.

    A file that cannot be read, is not UTF-8, is not YAML or is empty raises `ConfigError`
    saying why, at the file's path (for YAML, at the line and column where it broke).
    """
    file = Path(path)
    text = _read(file)
    with collection_paused():
        return _load_text(file, text, env=env, read_env=read_env)


def _load_text(
    file: Path, text: str, *, env: Mapping[str, str] | None, read_env: bool
) -> FileConfig:
    try:
        data = yaml.load(text, Loader=_SAFE_LOADER)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(file)"
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(
            f"{file}: invalid YAML at {where}: {problem}", [(where, f"invalid YAML: {problem}")]
        ) from None
    if data is None:
        rule = "the file is empty: a configuration needs at least one provider or route"
        raise ConfigError(f"{file}: {rule}", [(str(file), rule)])
    return parse_config(_beside(file, data), env=env, read_env=read_env)


_PATH_KEYS = ("catalog_file", "catalogFile")


def _beside(file: Path, data: Any) -> Any:
    """`data` with a relative `catalog_file` made a path beside `file` (a value holding a
    `${VAR}` is left as it is)."""
    if not isinstance(data, dict):
        return data
    for key in _PATH_KEYS:
        value = data.get(key)
        if isinstance(value, str) and value and "${" not in value:
            data = {**data, key: str(file.resolve().parent / Path(value).expanduser())}
    return data


def _read(file: Path) -> str:
    """The file's text, or `ConfigError` saying why there is none."""
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        raise _unreadable(file, "no such file") from None
    except IsADirectoryError:
        raise _unreadable(file, "it is a directory, not a file") from None
    except PermissionError:
        raise _unreadable(file, "permission denied") from None
    except OSError as exc:
        raise _unreadable(file, exc.strerror or str(exc)) from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        why = f"it is not UTF-8 text (byte 0x{raw[exc.start]:02x} on line {line})"
        raise _unreadable(file, why) from None


def _unreadable(file: Path, why: str) -> ConfigError:
    rule = f"cannot read the configuration: {why}"
    return ConfigError(f"{file}: {rule}", [(str(file), rule)])


def _config_error(errors: list[tuple[str, str]]) -> ConfigError:
    lines = "\n".join(f"  {path}: {message}" for path, message in errors)
    count = len(errors)
    noun = "error" if count == 1 else "errors"
    return ConfigError(f"invalid configuration ({count} {noun}):\n{lines}", errors)
