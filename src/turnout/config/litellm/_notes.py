"""The notes of an import: one line for each LiteLLM setting that was not carried or changed.

Every note names the LiteLLM path it is about. Notes about the same key of several deployments,
for the same reason, are merged into one line: `model_list[0,2].litellm_params.tpm`.
A note never holds a setting's value unless that value is a number or a model or strategy name.
"""

from __future__ import annotations

import re

__all__ = ["Notes"]

_DEPLOYMENT = re.compile(r"model_list\[(\d+)\](.*)\Z")
_NOT_CARRIED = "not carried"
_SECTIONS = ("model_list", "router_settings", "litellm_settings", "general_settings")
_CHANGED = "changed"


class Notes:
    """Collects notes in the order they are found."""

    def __init__(self) -> None:
        self._items: list[tuple[str, str, str]] = []

    def drop(self, path: str, reason: str) -> None:
        """`path` was not carried into the turnout configuration, because of `reason`."""
        self._add(_NOT_CARRIED, path, reason)

    def change(self, path: str, reason: str) -> None:
        """`path` was carried, but differently: `reason` says how."""
        self._add(_CHANGED, path, reason)

    def _add(self, verb: str, path: str, reason: str) -> None:
        item = (verb, path, " ".join(reason.split()))
        if item not in self._items:
            self._items.append(item)

    def lines(self) -> list[str]:
        """Every note as one line, deployment notes with one key and reason merged."""
        merged: dict[tuple[str, bool, str, str], list[str]] = {}
        for verb, path, reason in self._items:
            match = _DEPLOYMENT.match(path)
            if match is None:
                merged.setdefault((verb, False, path, reason), [])
            else:
                merged.setdefault((verb, True, match.group(2), reason), []).append(match.group(1))
        lines = []
        by_section = sorted(merged.items(), key=lambda item: _rank(item[0][1], item[0][2]))
        for (verb, per_deployment, path, reason), indexes in by_section:
            where = f"model_list[{','.join(indexes)}]{path}" if per_deployment else path
            lines.append(f"{verb}: {where} ({reason})")
        return lines


def _rank(per_deployment: bool, path: str) -> int:
    """Notes come in the order of LiteLLM's sections, then in the order they were found."""
    if per_deployment:
        return 0
    section = re.split(r"[.\[]", path, maxsplit=1)[0]
    return _SECTIONS.index(section) if section in _SECTIONS else len(_SECTIONS)
