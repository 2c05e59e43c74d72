"""The configuration reference, rendered from the configuration file's schema.

`render_reference()` walks the schema's models from the file's root model and returns one
markdown page: a section per object with the dotted paths where it appears, a table
`key | type | default | meaning` (types and ranges read from the schema, meanings from each
field's `description`), and a short example for the main objects; then the options of the
start strategies, which the engine checks rather than the schema.

`docs/configuration.md` is this page, committed; a test keeps the two equal, so an option
added without a description fails CI. Print it with `python -m turnout.config.reference`.

Paths: `.` enters an object, `[]` an item of a list, `<key>` an entry of a map
(`routes[].targets[].timeout`, `providers[].prices.<model>.input`).
"""

from __future__ import annotations

import re
import sys
import types
import typing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel
from pydantic.alias_generators import to_camel
from pydantic.fields import FieldInfo

from turnout import schema  # the one place that names the schema module
from turnout.routing.strategy_settings import STRATEGY_TYPES

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "EXAMPLES",
    "ROOT",
    "STRATEGY_OPTIONS",
    "STRATEGY_STARTS",
    "ObjectSection",
    "field_paths",
    "main",
    "object_sections",
    "render_reference",
]

ROOT: type[BaseModel] = schema.FileConfig
"""The model of the whole file, where the walk starts."""

REGENERATE = "python -m turnout.config.reference > docs/configuration.md"
"""The command that rewrites the committed page."""

# The placeholder a map's key gets in a path, by field name (default `<key>`).
_MAP_KEYS = {"prices": "<model>", "catalog": "<model>"}

STRATEGY_STARTS: dict[str, str] = {
    "failover": "the first target (the default).",
    "round-robin": "the next target in turn, among the targets that are not `fallback_only`.",
    "weighted": "a random target, in proportion to `weight`; weight 0 never starts.",
    "lowest-cost": "the target whose model has the lowest input + output price; a target "
    "without a price goes last.",
    "lowest-latency": "the target with the lowest 95th-percentile latency (time to first token "
    "for streams, to the whole answer otherwise) over a rolling window.",
    "least-busy": "the target with the fewest calls in flight in this process.",
}
"""What each `strategy.type` starts a request on (ties: higher `weight`, then list order)."""

STRATEGY_OPTIONS: dict[str, tuple[str, str, str]] = {
    "window_minutes": (
        "number, 1 to 1440",
        "15",
        (
            "Minutes of answered calls kept per target: the latency window, and what "
            "`min_requests` counts."
        ),
    ),
    "min_requests": (
        "integer, 1 to 1000000",
        "20",
        (
            "Answered calls in the window a target needs to count as sampled. Under "
            "`lowest-latency`, targets with fewer rank after sampled ones."
        ),
    ),
    "exploration_share": (
        "number, 0 to 0.5",
        "0.05",
        (
            "Share of requests that start on an under-sampled target instead, taking them in turn; "
            "0 turns this off."
        ),
    ),
}
"""The options a strategy takes beside `type`: (type, default, meaning)."""

EXAMPLES: dict[type[BaseModel], str] = {
    schema.FileConfig: """\
project: default
server: {host: 127.0.0.1, port: 4000, auth: keys}
state: memory
defaults:
  circuit_breaker: {failure_threshold: 3, cooldown_seconds: 60}
providers:
  - {name: openai, kind: openai, api_key: "${OPENAI_API_KEY}"}
  - {name: anthropic, kind: anthropic, api_key: "${ANTHROPIC_API_KEY}"}
routes:
  - name: fast
    models: ["gpt-4o-mini"]
    targets:
      - {provider: openai, model: gpt-4o-mini, timeout: 30, max_retries: 1}
      - {provider: anthropic, model: claude-3-5-haiku-latest}
keys:
  - {name: app, key: "${APP_KEY}", teams: [platform]}
""",
    schema.ProviderConfig: """\
providers:
  - name: openai
    kind: openai
    api_key: "${OPENAI_API_KEY}"
    prices: {gpt-4o-mini: {input: 0.15, output: 0.60}}
    data_handling: {no_prompt_training: true, jurisdiction: US}
  - {name: local, kind: openai-compatible, preset: ollama, model_patterns: ["llama*"]}
  - {name: azure, kind: azure-openai, wire: openai-chat,
     base_url: "https://example.openai.azure.com", api_key: "${AZURE_API_KEY}"}
""",
    schema.RouteConfig: """\
routes:
  - name: fast
    models: ["gpt-4o-mini", "fast-*"]
    aliases: {quick: {openai: gpt-4o-mini, anthropic: claude-3-5-haiku-latest}}
    strategy: {type: lowest-latency, window_minutes: 15}
    request_timeout: 45
    fallbacks: {context: [long-context]}
    cache: {enabled: true, ttl_seconds: 300}
    targets:
      - {provider: openai, model: gpt-4o-mini}
      - {provider: anthropic, model: claude-3-5-haiku-latest}
""",
    schema.TargetConfig: """\
targets:
  - {provider: openai, model: gpt-4o-mini, timeout: 30, first_token_timeout: 5,
     max_retries: 1}
  - {provider: anthropic, model: claude-3-5-haiku-latest, fallback_only: true}
""",
    schema.KeyConfig: """\
keys:
  - {name: app, key: "${APP_KEY}", teams: [platform], routes: [fast]}
  - {name: ci, hash: "sha256:0f2b…", allowed_models: ["gpt-4o-mini"], recording: usage_only}
""",
    schema.BindingConfig: """\
bindings:
  - name: platform-fast
    subjects: [{team: platform}]
    grants: [{models: "gpt-*", route: fast}]
  - name: no-preview
    mode: deny
    subjects: [{everyone: true}]
    grants: [{models: "*-preview"}]
""",
    schema.TracingConfig: """\
server:
  tracing: {exporter: otlp, endpoint: "http://127.0.0.1:4318", service_name: gateway-eu,
            sample_ratio: 0.25}
""",
    schema.PolicyConfig: """\
policies:
  - {name: eu-only, mode: enforce, deny_when: {jurisdiction: [US]}}
  - {name: watch-groq, mode: observe, deny_when: {provider: groq, route: fast}}
""",
}
"""A short example per main object: a fragment of a configuration file (shape-valid)."""

_MARKDOWN_TITLES: dict[type[BaseModel], str] = {schema.FileConfig: "The file"}
# The constraint objects pydantic keeps in a field's metadata, by the attribute each one has.
_BOUNDS = ("ge", "gt", "le", "lt", "min_length", "max_length")


@dataclass(frozen=True, slots=True)
class ObjectSection:
    """One object of the file: its model and every dotted path where it appears (the first
    one is the path its fields are listed under)."""

    model: type[BaseModel]
    paths: tuple[str, ...]

    @property
    def anchor(self) -> str:
        """The section's anchor: the model's name in words, dashed (`data-handling`)."""
        return "-".join(_words(self.model).split()).lower()

    @property
    def title(self) -> str:
        """The section's heading text."""
        return _MARKDOWN_TITLES.get(self.model) or _words(self.model).capitalize()

    def field_path(self, name: str) -> str:
        """The dotted path of the field `name` under this object's first path."""
        base = self.paths[0]
        return f"{base}.{name}" if base else name


def object_sections() -> list[ObjectSection]:
    """Every object reachable from `ROOT`, parents before children, in field order."""
    found: dict[type[BaseModel], list[str]] = {ROOT: [""]}
    order: list[type[BaseModel]] = [ROOT]

    def visit(model: type[BaseModel], base: str) -> None:
        for name, info in model.model_fields.items():
            path = f"{base}.{name}" if base else name
            for suffix, child in _models_in(info.annotation, name):
                child_path = path + suffix
                if child in found:
                    if child_path not in found[child]:
                        found[child].append(child_path)
                    continue
                found[child] = [child_path]
                order.append(child)
                visit(child, child_path)

    visit(ROOT, "")
    return [ObjectSection(model, tuple(found[model])) for model in order]


def field_paths() -> list[str]:
    """The dotted path of every field of every object, under each object's first path."""
    return [
        section.field_path(name)
        for section in object_sections()
        for name in section.model.model_fields
    ]


def render_reference() -> str:
    """The configuration reference page, as markdown."""
    sections = object_sections()
    anchors = {section.model: section.anchor for section in sections}
    index = ["| object | where |", "|---|---|"]
    index += [
        f"| [{section.title}](#{section.anchor}) | {_where(section)} |" for section in sections
    ]
    index.append("| [Strategy](#strategy) | `routes[].strategy` |")
    parts = [_INTRO, "\n".join(index)]
    parts += [_render_section(section, anchors) for section in sections]
    parts += [_render_strategies(), _OUTRO]
    return "\n\n".join(parts) + "\n"


def main() -> int:
    """Print the page (`python -m turnout.config.reference`)."""
    sys.stdout.write(render_reference())
    return 0


# ---- sections -------------------------------------------------------------------------------

_INTRO = """\
# Configuration reference

`turnout serve --config FILE` reads one YAML file. This page lists every key it accepts.
It is generated from the configuration schema, so it always matches the code.

- Check a file with `turnout check FILE`. It prints every error with its path, for example
  `routes[2].targets[0].max_retries: ...`, and exits with status 1 if there is any.
- `${VAR}` in any string reads the environment variable `VAR`. A variable that is not set
  is an error that names it.
- An unknown key is an error, and the message suggests the nearest valid key.
- Every key also accepts its camelCase spelling (`failureThreshold`, `fallbackOnly`).
- Times are in seconds unless a key says otherwise. Prices are in USD per 1M tokens.

Paths: `.` enters an object, `[]` is any item of a list, and `<key>` is any entry of a map.
So `routes[].targets[].timeout` is the `timeout` of every target of every route."""

_OUTRO = (
    """\
---

This page is generated. To change it, edit the field descriptions in the configuration
schema and run:

```sh
"""
    + REGENERATE
    + "\n```"
)


def _render_section(section: ObjectSection, anchors: dict[type[BaseModel], str]) -> str:
    lines = [f"## {section.title} {{#{section.anchor}}}", ""]
    lines.append(f"Where: {_where(section)}.")
    doc = _docstring(section.model)
    if doc:
        lines += ["", doc]
    lines += ["", "| key | type | default | meaning |", "|---|---|---|---|"]
    for name, info in section.model.model_fields.items():
        key = f"`{section.field_path(name)}`"
        kind = _type_text(info.annotation, anchors, info.metadata)
        meaning = (info.description or "").strip()
        alias = info.alias
        if alias is not None and alias != to_camel(name):
            meaning += f" (camelCase: `{alias}`)"
        lines.append(
            f"| {key} | {_cell(kind)} | {_cell(_default_text(info, anchors))} | {_cell(meaning)} |"
        )
    example = EXAMPLES.get(section.model)
    if example is not None:
        lines += ["", "Example:", "", "```yaml", example.rstrip("\n"), "```"]
    return "\n".join(lines)


def _render_strategies() -> str:
    lines = [
        "## Strategy {#strategy}",
        "",
        "Where: `routes[].strategy`.",
        "",
        _STRATEGY_INTRO,
        "",
        "| `type` | starts on | options |",
        "|---|---|---|",
    ]
    for kind, options in STRATEGY_TYPES.items():
        listed = ", ".join(f"`{option}`" for option in sorted(options)) or "none"
        lines.append(f"| `{kind}` | {_cell(STRATEGY_STARTS[kind])} | {listed} |")
    lines += ["", "| option | type | default | meaning |", "|---|---|---|---|"]
    used = sorted({option for options in STRATEGY_TYPES.values() for option in options})
    for option in used:
        kind, default, meaning = STRATEGY_OPTIONS[option]
        lines.append(f"| `routes[].strategy.{option}` | {kind} | `{default}` | {_cell(meaning)} |")
    return "\n".join(lines)


_STRATEGY_INTRO = (
    "Where a request starts; the other targets follow in list order, then the "
    "`fallback_only` ones. Write the type alone (`strategy: round-robin`) or with its "
    "options beside it (`strategy: {type: lowest-latency, window_minutes: 15}`). Under "
    "`lowest-cost`, `lowest-latency` and `least-busy`, ties go to the higher `weight`, "
    "then to the earlier target."
)


def _where(section: ObjectSection) -> str:
    if section.paths == ("",):
        return "the top level of the file"
    return ", ".join(f"`{path}`" for path in section.paths)


def _docstring(model: type[BaseModel]) -> str:
    doc = model.__doc__ or ""
    return " ".join(doc.split())


def _words(model: type[BaseModel]) -> str:
    name = model.__name__.removesuffix("Config")
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name).lower()


def _cell(text: str) -> str:
    """Text safe inside a table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


# ---- types ----------------------------------------------------------------------------------


def _models_in(annotation: Any, name: str) -> Iterator[tuple[str, type[BaseModel]]]:
    """The models inside a field's type, each with the path suffix that reaches it."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield "", annotation
        return
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        yield from _models_in(args[0], name)
    elif origin in (typing.Union, types.UnionType):
        for arg in args:
            yield from _models_in(arg, name)
    elif origin is tuple:
        for suffix, model in _models_in(args[0], name):
            yield "[]" + suffix, model
    elif origin is dict:
        for suffix, model in _models_in(args[1], name):
            yield "." + _MAP_KEYS.get(name, "<key>") + suffix, model


def _type_text(annotation: Any, anchors: dict[type[BaseModel], str], metadata: list[Any]) -> str:
    """A field's type in words, with its range (`integer, 1 to 10`) and links to objects; the
    range of an optional field belongs to its value (`number > 0, or null`)."""
    value, nullable = _optional(annotation)
    text = _with_limits(_plain_type(value, anchors), _limits(metadata, _is_sized(value)))
    return f"{text}, or null" if nullable else text


def _optional(annotation: Any) -> tuple[Any, bool]:
    """`(T, True)` for `T | None`, else `(annotation, False)`."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 2:
        rest = [arg for arg in args if arg is not type(None)]
        if len(rest) == 1:
            return rest[0], True
    return annotation, False


def _with_limits(text: str, limits: str) -> str:
    """`number > 0`, `integer, 1 to 10`, or `text` alone."""
    if not limits:
        return text
    return f"{text} {limits}" if limits.startswith(("<", ">")) else f"{text}, {limits}"


def _plain_type(annotation: Any, anchors: dict[type[BaseModel], str]) -> str:
    if annotation is type(None):
        return "null"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"[{_words(annotation)}](#{anchors[annotation]})"
    simple = {bool: "boolean", int: "integer", float: "number", str: "string"}
    if annotation in simple:
        return simple[annotation]
    if annotation is Any:
        return "any"
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        metadata = [part for meta in args[1:] for part in _metadata_of(meta)]
        return _with_limits(_plain_type(args[0], anchors), _limits(metadata, False))
    if origin is Literal:
        return "one of " + ", ".join(f"`{value}`" for value in args)
    if origin in (typing.Union, types.UnionType):
        return ", or ".join(
            "null" if arg is type(None) else _plain_type(arg, anchors) for arg in args
        )
    if origin is tuple:
        return f"list of {_plain_type(args[0], anchors)}"
    if origin is dict:
        key, value = (_plain_type(arg, anchors) for arg in args)
        return f"map of {key} to {value}"
    return str(annotation)


def _metadata_of(meta: Any) -> list[Any]:
    return list(meta.metadata) if isinstance(meta, FieldInfo) else [meta]


def _is_sized(annotation: Any) -> bool:
    """Whether a length limit counts items (a list or map) rather than characters."""
    return typing.get_origin(annotation) in (tuple, dict)


def _limits(metadata: list[Any], sized: bool) -> str:
    """`1 to 10`, `> 0`, `> 0, at most 86400`, `at least 1 item` … from a field's metadata."""
    bounds: dict[str, Any] = {}
    for meta in metadata:
        for attribute in _BOUNDS:
            value = getattr(meta, attribute, None)
            if value is not None:
                bounds[attribute] = value
    words: list[str] = []
    if "ge" in bounds and "le" in bounds:
        words.append(f"{_number(bounds['ge'])} to {_number(bounds['le'])}")
    else:
        if "gt" in bounds:
            words.append(f"> {_number(bounds['gt'])}")
        if "ge" in bounds:
            words.append(f"at least {_number(bounds['ge'])}")
        if "le" in bounds:
            words.append(f"at most {_number(bounds['le'])}")
        if "lt" in bounds:
            words.append(f"< {_number(bounds['lt'])}")
    unit = "item" if sized else "character"
    low, high = bounds.get("min_length"), bounds.get("max_length")
    if low is not None and high is not None:
        words.append(f"{low} to {high} {unit}s")
    elif low is not None:
        words.append(f"at least {low} {unit}{'' if low == 1 else 's'}")
    elif high is not None:
        words.append(f"at most {high} {unit}s")
    return ", ".join(words)


# ---- defaults -------------------------------------------------------------------------------


def _default_text(info: FieldInfo, anchors: dict[type[BaseModel], str]) -> str:
    if info.is_required():
        return "required"
    value = info.get_default(call_default_factory=True)
    if isinstance(value, BaseModel):
        model = type(value)
        return f"see [{_words(model)}](#{anchors[model]})"
    return f"`{_yaml(value)}`"


def _yaml(value: Any) -> str:
    """`value` as inline YAML: `null`, `true`, `60`, `[]`, `{type: failover}`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_yaml(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key}: {_yaml(item)}" for key, item in value.items()) + "}"
    return str(value)


def _number(value: Any) -> str:
    return _yaml(value)


if __name__ == "__main__":
    sys.exit(main())
