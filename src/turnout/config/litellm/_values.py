"""Values read from a LiteLLM config: `os.environ/VAR` references, literal secrets, numbers.

Rule 1: a literal secret never reaches the output or a note. It is replaced by
`${TURNOUT_IMPORTED_KEY_n}`; only a digest of it is kept, in memory, so that the same literal
used twice gets the same variable (and providers that shared a key still merge).
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from turnout.config.litellm._notes import Notes

__all__ = ["Secrets", "env_reference", "is_loopback", "number", "reference_of", "text_of"]

_ENV_PREFIX = "os.environ/"
_VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_IMPORTED = "TURNOUT_IMPORTED_KEY_"


def env_reference(value: object) -> str | None:
    """`os.environ/VAR` -> `${VAR}`; anything else (or an unusable variable name) -> None."""
    if not isinstance(value, str) or not value.startswith(_ENV_PREFIX):
        return None
    name = value[len(_ENV_PREFIX) :].strip()
    return "${" + name + "}" if _VAR_NAME.match(name) else None


def text_of(value: object) -> str | None:
    """A plain setting as turnout text: `os.environ/VAR` -> `${VAR}`, a scalar -> its text."""
    reference = env_reference(value)
    if reference is not None:
        return reference
    if isinstance(value, bool) or value is None or isinstance(value, dict | list):
        return None
    text = str(value).strip()
    return text or None


def number(value: object) -> float | None:
    """A finite number from an int, float or numeric string; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        result = float(value)
    elif isinstance(value, str):
        try:
            result = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return result if math.isfinite(result) else None


def is_loopback(url: str) -> bool:
    """The URL's host is this machine (localhost, 127.x, ::1)."""
    host = re.sub(r"^[a-z][a-z0-9+.-]*://", "", url.strip().lower()).split("/")[0]
    host = host.rsplit("@", 1)[-1]
    host = host[1:].split("]")[0] if host.startswith("[") else host.split(":")[0]
    return host in {"localhost", "::1"} or host.startswith("127.")


class Secrets:
    """The literal secrets of one file, each given a `TURNOUT_IMPORTED_KEY_n` variable."""

    def __init__(self) -> None:
        self._names: dict[str, str] = {}

    def variable_for(self, literal: str) -> tuple[str, bool]:
        """The variable standing for `literal`, and whether it is new."""
        digest = hashlib.sha256(literal.encode("utf-8")).hexdigest()
        if digest in self._names:
            return self._names[digest], False
        name = f"{_IMPORTED}{len(self._names) + 1}"
        self._names[digest] = name
        return name, True


def reference_of(value: object, path: str, secrets: Secrets, notes: Notes) -> str | None:
    """A secret setting as `${VAR}`: `os.environ/VAR` kept, a literal replaced (with a note).

    None or an empty value gives None.
    """
    reference = env_reference(value)
    if reference is not None:
        return reference
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    name, is_new = secrets.variable_for(str(value))
    if is_new:
        notes.change(path, f"a literal secret, not copied: set {name} to it")
    else:
        notes.change(path, f"the same literal secret as {name}, not copied")
    return "${" + name + "}"
