"""`turnout demo`: a gateway in front of a failing mock upstream, called through the real SDKs.

The gateway and `turnout mock-upstream` run in-process on free 127.0.0.1 ports (`DemoStage`);
the mock upstream is told which calls to fail (queued fault scripts), so every failover is real
HTTP. Calls go through the official `openai` SDK (and, asked for, the `anthropic` SDK), and
each routing record is printed as a table: the `routing` object of the answer's body, or the
`x-turnout-attempts` header for a stream (its body is the model's own chunks). Offline, no
keys, deterministic output; a few seconds, most of them importing the SDKs.
"""

from __future__ import annotations

import contextlib
import importlib.util
import threading
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import unquote

from turnout.access.keys import generate_key, hash_key
from turnout.demo.stage import DemoStage

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import TextIO

__all__ = [
    "ANTHROPIC_SCENARIO",
    "SCENARIOS",
    "Row",
    "demo_config",
    "format_rows",
    "missing_requirements",
    "rows_from_body",
    "rows_from_header",
    "run_gateway_demo",
]

QUESTION: Any = [{"role": "user", "content": "Why is checkout failing?"}]
DEMO_KEY = "sk-demo"  # the gateway runs with `auth: open`; the SDKs insist on some key

ROUTES: tuple[tuple[str, tuple[tuple[str, str], ...], dict[str, Any]], ...] = (
    ("triage", (("openai", "gpt-4o-mini"), ("anthropic", "claude-3-5-haiku-latest")), {}),
    (
        "summarise",
        (("openai", "gpt-4o"), ("local", "llama-3.1-8b")),
        {"circuit_breaker": {"failure_threshold": 2, "cooldown_seconds": 60}},
    ),
    ("chat", (("openai", "gpt-4.1-mini"), ("local", "llama-3.1-8b")), {}),
    ("writer", (("anthropic", "claude-sonnet-4-5"), ("anthropic", "claude-3-5-haiku-latest")), {}),
)
"""Each route of the demo: its name (the model callers ask for), its targets as (provider,
model) in try order, and its options."""


def demo_config(upstream_url: str) -> dict[str, Any]:
    """The gateway's configuration: three providers at the mock upstream and the `ROUTES`."""
    return {
        "project": "demo",
        "server": {"auth": "open"},
        "providers": [
            {"name": "openai", "kind": "openai", "api_key": "sk-demo-openai",
             "base_url": f"{upstream_url}/v1"},
            {"name": "anthropic", "kind": "anthropic", "api_key": "sk-ant-demo",
             "base_url": upstream_url},
            {"name": "local", "kind": "openai-compatible", "api_key": "sk-demo-local",
             "base_url": f"{upstream_url}/v1"},
        ],
        "routes": [
            {
                "name": name,
                "models": [name],
                "targets": [{"provider": p, "model": m} for p, m in targets],
                **options,
            }
            for name, targets, options in ROUTES
        ],
    }  # fmt: skip


class Row(NamedTuple):
    """One attempt entry as the caller sees it."""

    target: str
    outcome: str
    error_class: str = ""
    status: str = ""
    reason: str = ""


def rows_from_body(routing: Mapping[str, Any]) -> list[Row]:
    """The attempt entries of an answer's `routing` object."""
    return [
        Row(
            str(entry["target"]),
            str(entry["outcome"]),
            entry.get("error_class") or "",
            _text(entry.get("status")),
            _reason(entry.get("reason"), entry.get("status")),
        )
        for entry in routing["attempts"]
    ]


def _text(value: object) -> str:
    return "" if value is None else str(value)


def _reason(reason: object, status: object) -> str:
    """The entry's reason, blank when it only repeats the status."""
    return "" if reason is None or str(reason) == _text(status) else str(reason)


def rows_from_header(value: str) -> list[Row]:
    """The attempt entries of an `x-turnout-attempts` header
    (`target;outcome=…;class=…;status=…;ms=…`, comma separated)."""
    rows = []
    for item in filter(None, (part.strip() for part in value.split(","))):
        target, *pairs = item.split(";")
        fields = dict(pair.partition("=")[::2] for pair in pairs)
        rows.append(
            Row(
                unquote(target),
                fields.get("outcome", ""),
                fields.get("class", ""),
                fields.get("status", ""),
            )
        )
    return rows


_HEADINGS = Row("target", "outcome", "class", "status", "reason")


def format_rows(rows: Sequence[Row], indent: str = "   ") -> str:
    """`rows` as an aligned table with a heading and a 1-based `#` column."""
    table = [("#", *_HEADINGS), *((str(n), *row) for n, row in enumerate(rows, start=1))]
    widths = [max(len(line[column]) for line in table) for column in range(len(_HEADINGS) + 1)]
    return "\n".join(
        indent
        + "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in table
    )


class _Clients(NamedTuple):
    openai: Any
    anthropic: Any | None


def _call_line(out: TextIO, sdk: str, path: str, model: str, extra: str = "") -> None:
    out.write(f"   {sdk} SDK -> POST {path}  model={model!r}{extra}\n")


def _scripted(out: TextIO, text: str) -> None:
    out.write(f"   mock upstream: {text}\n")


def _served(out: TextIO, headers: Mapping[str, str], text: str) -> None:
    out.write(f"   -> {headers.get('x-turnout-target', '?')} answered: {text!r}\n")


def rate_limit(stage: DemoStage, clients: _Clients, out: TextIO) -> None:
    """The first target answers 429; the second (another vendor) answers."""
    stage.script("gpt-4o-mini", ["status=429"])
    _scripted(out, "gpt-4o-mini answers its next call with 429")
    _call_line(out, "openai", "/v1/chat/completions", "triage")
    raw = clients.openai.chat.completions.with_raw_response.create(
        model="triage", messages=QUESTION
    )
    completion = raw.parse()
    out.write(format_rows(rows_from_body(raw.http_response.json()["routing"])) + "\n")
    _served(out, raw.headers, completion.choices[0].message.content)


def breaker(stage: DemoStage, clients: _Clients, out: TextIO) -> None:
    """Two 503s in a row open gpt-4o's breaker (threshold 2); the third request skips it."""
    stage.script("gpt-4o", ["status=503", "status=503"])
    _scripted(out, "gpt-4o answers its next two calls with 503")
    for number in (1, 2, 3):
        _call_line(out, "openai", "/v1/chat/completions", "summarise", f"  (request {number})")
        raw = clients.openai.chat.completions.with_raw_response.create(
            model="summarise", messages=QUESTION
        )
        raw.parse()
        out.write(format_rows(rows_from_body(raw.http_response.json()["routing"])) + "\n")
    calls = stage.upstream_calls("gpt-4o")
    out.write(f"   the mock upstream saw {calls} calls for gpt-4o: the open breaker spared it\n")


def stream(stage: DemoStage, clients: _Clients, out: TextIO) -> None:
    """The first target opens its stream, then sends an error event before any token."""
    stage.script("gpt-4.1-mini", ["error_event"])
    _scripted(out, "gpt-4.1-mini opens its next stream, then sends an error event before any token")
    _call_line(out, "openai", "/v1/chat/completions", "chat", "  stream=True")
    raw = clients.openai.chat.completions.with_raw_response.create(
        model="chat", messages=QUESTION, stream=True
    )
    chunks = [chunk for chunk in raw.parse() if chunk.choices]
    out.write(format_rows(rows_from_header(raw.headers.get("x-turnout-attempts", ""))) + "\n")
    _served(out, raw.headers, "".join(c.choices[0].delta.content or "" for c in chunks))
    models = ", ".join(sorted({chunk.model for chunk in chunks}))
    out.write(f"   ({len(chunks)} chunks reached the caller, every one from {models})\n")


def anthropic_messages(stage: DemoStage, clients: _Clients, out: TextIO) -> None:
    """The Anthropic SDK: claude-sonnet-4-5 is overloaded (529); claude-3-5-haiku answers."""
    assert clients.anthropic is not None, "run with anthropic=True"
    stage.script("claude-sonnet-4-5", ["status=529"])
    _scripted(out, "claude-sonnet-4-5 answers its next call with 529 (overloaded)")
    _call_line(out, "anthropic", "/v1/messages", "writer")
    raw = clients.anthropic.messages.with_raw_response.create(
        model="writer", max_tokens=64, messages=QUESTION
    )
    message = raw.parse()
    out.write(format_rows(rows_from_body(raw.http_response.json()["routing"])) + "\n")
    _served(out, raw.headers, message.content[0].text)


SCENARIOS: tuple[tuple[str, Callable[[DemoStage, _Clients, TextIO], None]], ...] = (
    ("A 429 on the first target fails over to the second", rate_limit),
    ("Repeated 503s open the breaker; the next request skips the target", breaker),
    ("A stream fails over before its first token", stream),
)
"""Each gateway scenario's title and function (the OpenAI SDK)."""

ANTHROPIC_SCENARIO: tuple[str, Callable[[DemoStage, _Clients, TextIO], None]] = (
    "The Anthropic SDK on /v1/messages: an overloaded model fails over",
    anthropic_messages,
)
"""The scenario `--anthropic` adds (the Anthropic SDK takes a few seconds to import)."""


def _describe_routes(out: TextIO) -> None:
    out.write("A gateway on 127.0.0.1 in front of a mock upstream that fails on cue. Routes:\n")
    for name, targets, options in ROUTES:
        chain = " -> ".join(f"{provider}:{model}" for provider, model in targets)
        note = ""
        if "circuit_breaker" in options:
            breaker_options = options["circuit_breaker"]
            note = (
                f"  (breaker opens after {breaker_options['failure_threshold']} failures"
                f" for {breaker_options['cooldown_seconds']} s)"
            )
        out.write(f"  {name:<10} {chain}{note}\n")


def _clients(base_url: str, openai_base_url: str, *, anthropic: bool) -> _Clients:
    import openai  # noqa: PLC0415 - an optional dependency of the demo

    oai = openai.OpenAI(base_url=openai_base_url, api_key=DEMO_KEY, max_retries=0)
    if not anthropic:
        return _Clients(oai, None)
    import anthropic as anthropic_sdk  # noqa: PLC0415 - optional, and slow to import

    ant = anthropic_sdk.Anthropic(base_url=base_url, api_key=DEMO_KEY, max_retries=0)
    return _Clients(oai, ant)


def missing_requirements(*, anthropic: bool = False) -> list[str]:
    """The packages the gateway demo needs that are not installed (`openai`, and with
    `anthropic` the Anthropic SDK)."""
    names = ("openai", "anthropic") if anthropic else ("openai",)
    return [name for name in names if importlib.util.find_spec(name) is None]


def _until_interrupted(_url: str, _admin_key: str) -> None:
    with contextlib.suppress(KeyboardInterrupt):
        threading.Event().wait()


def run_gateway_demo(
    out: TextIO,
    *,
    anthropic: bool = False,
    keep: bool = False,
    hold: Callable[[str, str], None] | None = None,
) -> None:
    """Start the stage, run the scenarios (with `anthropic`, also the Anthropic SDK's) and
    write each routing record to `out`.

    With `keep`, the gateway stays up afterwards with its dashboard at `/ui`, signed in with a
    fresh admin key printed once, until `hold(url, admin_key)` returns (default: until Ctrl-C).
    """
    scenarios = [*SCENARIOS, ANTHROPIC_SCENARIO] if anthropic else list(SCENARIOS)
    admin_key = generate_key() if keep else None
    hashes = None if admin_key is None else frozenset({hash_key(admin_key)})
    with DemoStage(demo_config, admin_hashes=hashes) as stage:
        clients = _clients(stage.url, stage.openai_base_url, anthropic=anthropic)
        try:
            _describe_routes(out)
            for number, (title, scenario) in enumerate(scenarios, start=1):
                out.write(f"\n{number}. {title}\n")
                scenario(stage, clients, out)
            if not anthropic:
                out.write("\n(turnout demo --anthropic adds a call through the Anthropic SDK)\n")
            if admin_key is None:
                out.write("(turnout demo --keep keeps the gateway up, with its dashboard at /ui)\n")
            else:
                out.write(
                    f"\nThe gateway stays up at {stage.url} (OpenAI base URL"
                    f" {stage.openai_base_url}).\nDashboard: {stage.url}/ui, sign in with the"
                    f" admin key {admin_key}\nPress Ctrl-C to stop.\n"
                )
                out.flush()
                (hold or _until_interrupted)(stage.url, admin_key)
        finally:
            clients.openai.close()
            if clients.anthropic is not None:
                clients.anthropic.close()
