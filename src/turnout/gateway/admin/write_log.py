"""The log line of every admin write: who made it, what it was, the object and its project,
and how it was answered.

Rule 1: every write the admin API answers (a POST, PATCH, PUT or DELETE but the routing test,
which changes nothing) has one INFO line `admin_write` on the `turnout.admin` logger, whether
it succeeded or was refused (a 400 validation failure, a 404, a 409 …), once its answer is
known.
Rule 2: its fields: `admin` (the admin key's id, `adm_…`, never the key), `method`, `kind` (the
collection written, as in the path: `projects`, `keys`, `routes` …), `project`, `id` and `name`
(of the object, from the path, else from the answer or the body; none when unknown), `status`.
Rule 3: nothing else from a body reaches the line: a created key's plaintext never does.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Final

import orjson

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.gateway.admin.dispatch import Operation

__all__ = ["WRITE_METHODS", "is_write", "log_write"]

logger = logging.getLogger("turnout.admin")

WRITE_METHODS: Final = frozenset({"POST", "PATCH", "PUT", "DELETE"})
_READS: Final = frozenset({"/routing/test"})
"""POST operations that change nothing."""


def is_write(operation: Operation) -> bool:
    """Rule 1: whether `operation` changes stored objects."""
    return operation.method in WRITE_METHODS and operation.path not in _READS


def log_write(
    operation: Operation,
    admin: str,
    params: Mapping[str, str],
    body: Mapping[str, Any],
    *,
    status: int,
    answer: bytes = b"",
) -> None:
    """Rules 1 to 3: the `admin_write` line of one write answered `status` (`answer`: the
    body it was answered with)."""
    if not logger.isEnabledFor(logging.INFO):
        return
    answered = _object(answer) if 200 <= status < 300 else {}
    found = answered or body
    project = params.get("project_id")
    object_id = params.get("object_id") or answered.get("id")
    if operation.tag == "projects":
        object_id = project = project or answered.get("id")
    fields = {
        "admin": admin,
        "method": operation.method,
        "kind": operation.tag,
        "project": project,
        "id": object_id,
        "name": _text(found.get("name")),
        "status": status,
    }
    logger.info("admin_write", extra={"fields": fields})


def _object(answer: bytes) -> dict[str, Any]:
    """The answer's JSON object (an empty one for no body or another shape)."""
    if not answer:
        return {}
    try:
        found = orjson.loads(answer)
    except orjson.JSONDecodeError:
        return {}
    return found if isinstance(found, dict) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
