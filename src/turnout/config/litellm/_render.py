"""The imported configuration as YAML text: a comment header with the notes, then sections.

Small mappings of plain values (a target, a price, a strategy) are written in flow style on one
line, the way the configuration file's own examples are; everything else in block style.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import yaml

__all__ = ["referenced_variables", "render"]

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_FLOW_WIDTH = 90


class _Flow(dict[str, Any]):
    """A mapping written on one line."""


if TYPE_CHECKING:
    _BaseDumper = yaml.SafeDumper
else:  # libyaml's emitter when PyYAML was built with it: the same output, many times faster
    _BaseDumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Dumper(_BaseDumper):
    """Block style unless a mapping is a `_Flow` or a list holds only scalars; no anchors."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_flow(dumper: yaml.SafeDumper, data: _Flow) -> yaml.MappingNode:
    return dumper.represent_mapping("tag:yaml.org,2002:map", data.items(), flow_style=True)


def _represent_dict(dumper: yaml.SafeDumper, data: dict[str, Any]) -> yaml.MappingNode:
    return dumper.represent_mapping("tag:yaml.org,2002:map", data.items(), flow_style=False)


def _represent_list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.SequenceNode:
    flow = bool(data) and all(_is_scalar(item) for item in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_Dumper.add_representer(_Flow, _represent_flow)
_Dumper.add_representer(dict, _represent_dict)
_Dumper.add_representer(list, _represent_list)


def _is_scalar(value: object) -> bool:
    return not isinstance(value, dict | list | tuple)


def _styled(value: Any) -> Any:
    """Copy of `value` with leaf mappings marked for flow style: each mapping of scalars, and
    the items of a list of such mappings when every one of them fits on a line."""
    if isinstance(value, list):
        items = [_styled(item) for item in value]
        flows = [item for item in items if isinstance(item, _Flow)]
        if flows and len(flows) == len(items) and not all(_fits(item) for item in flows):
            items = [dict(item) for item in flows]
        return items
    if isinstance(value, dict):
        styled = {key: _styled(item) for key, item in value.items()}
        if styled and all(_is_scalar(item) for item in styled.values()):
            return _Flow(styled)
        return {key: item if not isinstance(item, _Flow) or _fits(item) else dict(item)
                for key, item in styled.items()}  # fmt: skip
    return value


def _fits(mapping: _Flow) -> bool:
    text = yaml.dump(mapping, Dumper=_Dumper, width=10_000, allow_unicode=True)
    return len(text.strip()) <= _FLOW_WIDTH


def render(config: dict[str, Any], notes: list[str], variables: list[str]) -> str:
    """YAML text: the header comments, then each top-level section separated by a blank line."""
    header = [
        "# turnout configuration imported from a LiteLLM proxy config.",
        "# Review the notes below before use; `turnout check FILE` validates the result.",
    ]
    if variables:
        header.append(f"# environment variables read: {', '.join(variables)}")
    if notes:
        header.append("#")
        header.extend(f"# {note}" for note in notes)
    sections = [
        yaml.dump(
            {key: _styled(value)}, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100
        )
        for key, value in config.items()
    ]
    return "\n".join(header) + "\n\n" + "\n".join(sections)


def referenced_variables(config: object) -> list[str]:
    """Every `${VAR}` the configuration reads, in order of first use."""
    found: dict[str, None] = {}
    _collect(config, found)
    return list(found)


def _collect(value: object, found: dict[str, None]) -> None:
    if isinstance(value, str):
        found.update(dict.fromkeys(_VAR.findall(value)))
    elif isinstance(value, dict):
        for item in value.values():
            _collect(item, found)
    elif isinstance(value, list | tuple):
        for item in value:
            _collect(item, found)
