"""The fault grammar of the mock upstream: `GRAMMAR` is its reference text, the one source for
the package docstring and `turnout mock-upstream --help`.

Pure parsing and bookkeeping, no I/O: the in-process `MockProvider` reads the same grammar.

Rule 1: a fault spec is parsed once and cached by its text; parsing never depends on time.
Rule 2: a sequence (`a | b | c`) advances one step per request that carries the same spec text;
after its last step the requests get plain answers.
Rule 3: a script registered for a model is consumed before anything the request itself names.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = [
    "ANY_MODEL",
    "ANY_TOOL",
    "GRAMMAR",
    "NO_FAULT",
    "VENDORS",
    "Fault",
    "FaultBook",
    "parse_fault",
    "parse_sequence",
    "split_model",
]

GRAMMAR = """\
fault specs:
  A fault spec says what the mock does to one request. It is taken from, first match wins:
    1. a script queued for the model (POST /_mock/scripts): each request for the model takes
       the next step; model "*" serves any model, after the model's own script; when the
       queue is empty, the request's own spec applies
    2. the x-mock-fault request header
    3. the model name: everything after "fault:" (the part before the marker, without a
       trailing / @ + : -, is the model's base name), or a shorthand name
       mock-<word>-<word>... (below; an unknown word makes it an ordinary model name)
  A spec that does not parse is answered with a 400 naming the bad item.

  spec = step *( "|" step )    a sequence: the n-th request carrying the same spec text
                               gets step n; after the last step, plain answers
  step = "ok" / item *( ";" item )
  item = key [ "=" value ]

items (S: seconds, N: a count):
  status=N              answer HTTP N with the vendor's error body
  message=TEXT, type=T  override the error message / the error type (or code)
  vendor=V              error flavour: openai, anthropic, azure, deepseek, groq, kimi, zai,
                        xai, ollama, vllm (default: by endpoint)
  retry_after=S         Retry-After: S (alias retry=S)
  retry_after_date=S    Retry-After as an HTTP date S seconds ahead
  retry_after_ms=MS     retry-after-ms: MS
  quota                 the vendor's quota or credit signal: OpenAI 429 insufficient_quota;
                        Anthropic 400 "credit balance is too low"; DeepSeek 402; Kimi 429
                        exceeded_current_quota_error; Z.ai 429 code 1113; xAI 429 "used all
                        available credits"
  reset_in=S            with quota;vendor=zai: code 1308 "Your limit will reset at <time>",
                        S seconds ahead (China Standard Time, as Z.ai writes it)
  context_length        400 naming a context-length reason (alias ctx)
  content_policy        400 naming a content-policy reason
  refuse                200 refusal: finish_reason content_filter / stop_reason refusal /
                        Responses status incomplete (content_filter)
  latency=S             wait S seconds before the response headers (alias slow=S)
  hang                  never answer (until the client leaves, or the hold limit)
  reset                 reset the connection (TCP RST) before any response byte
  first_token=S         streams: headers and role/start events at once, the first content
                        chunk after S seconds
  chunk_delay=S         streams: S seconds between content chunks
  chunks=N              the answer in N content chunks (default: one per word)
  cut=N                 drop the connection after N content chunks (non-streams: after the
                        headers and half the body)
  stall=N               go silent after N content chunks, connection open
  end=N                 streams: end the body cleanly after N content chunks, with no
                        finish reason and no terminator
  malformed[=N]         a malformed event after N content chunks (default 1)
  no_done               end without data: [DONE] / message_stop (usage is still sent) /
                        response.completed
  error_event           streams: an in-stream error event (overloaded_error) before the
                        first content chunk
  stamp                 streams of text (not Bedrock): each content chunk's text is the
                        Unix time it was sent, in whole microseconds (to time delivery)
  body=KIND             bad bytes instead of the answer: garbage, truncated, nonutf8, html
                        (a proxy's 502 page), empty, wrong_type (right bytes, text/html);
                        status 200 unless status= is given (html: 502)
  tool_call[=NAME]      answer with a call of tool NAME (default: the forced tool, else the
                        first tool offered), whatever tool_choice says (alias tool)

shorthand names, mock-<word>-<word>...:
  a status (503), retry-S, slow-S, ttft-S (first_token), cut-N, stall-N, chunks-N, hang,
  reset, refuse, quota, ctx, policy (content_policy), nodone, malformed, errorevent,
  garbage, html, tool (tool_call); a vendor name after another word sets vendor=
  (mock-quota-kimi)

tool calls:
  A chat, messages or responses request that offers tools and forces a call (OpenAI
  tool_choice "required", a named function, or allowed_tools in required mode; Anthropic
  tool_choice {"type": "any"} or {"type": "tool", "name": ...}) is answered with one call of
  the forced tool, else the first tool; so is any request with tool_call when it offers tools
  or names one (a tool it does not offer is called with {}). Otherwise the answer is text, tools or
  not; refuse always refuses. The call has the vendor's shape: OpenAI message.tool_calls,
  content null, finish_reason tool_calls; Anthropic a tool_use block, stop_reason tool_use;
  Responses a function_call output item.
  Arguments are an example of the tool's JSON schema (required properties first; enum: first
  value; strings "mock", numbers 1, booleans true, arrays [], objects from their own
  properties). Streamed, the call's id and name come with the role/start events and each
  argument fragment is a content chunk (one per JSON token, or chunks=N), so first_token,
  chunk_delay, cut, stall, end and malformed act on them.

examples:
  model gpt-4o-mini/fault:status=429;retry_after=8     a 429 with Retry-After: 8
  model mock-429-retry-8                               the same, as a shorthand name
  model claude-sonnet-4-5/fault:status=529|ok          overloaded once, then answers
  header x-mock-fault: first_token=2;cut=3             a slow first token, then a drop
  model mock-tool                                      a call of the first tool offered
  header x-mock-fault: tool_call=get_weather;cut=2     a tool call cut after 2 fragments
  POST /_mock/scripts {"model": "gpt-4o-mini", "faults": ["status=503", "status=503", "ok"]}
                                                       two failures, then answers
"""
"""The fault grammar as reference text: where specs come from, the items, the shorthand words
and examples (plain text, at most 92 columns)."""

VENDORS = frozenset(
    {"openai", "anthropic", "azure", "deepseek", "groq", "kimi", "zai", "xai", "ollama", "vllm"}
)
"""Error-body flavours a fault may ask for with `vendor=`."""

BAD_BODIES = frozenset({"garbage", "truncated", "nonutf8", "html", "empty", "wrong_type"})
"""Kinds of bad bytes `body=` may send instead of a proper answer."""

_MARKER = "fault:"
ANY_MODEL = "*"
ANY_TOOL = "*"
"""`tool_call` without a name: the tool the request forces, else its first tool."""
_MODEL_SEPARATORS = "/@+:-"


@dataclass(frozen=True, slots=True)
class Fault:
    """One step of a fault spec: what the mock upstream does to one request.

    Times are float seconds. `None`/`False`/`0` fields do nothing. `spec` is the step's own text.
    """

    status: int | None = None
    message: str | None = None
    error_type: str | None = None
    vendor: str | None = None
    retry_after: float | None = None
    retry_after_date: float | None = None
    retry_after_ms: float | None = None
    reset_in: float = 0.0
    quota: bool = False
    context_length: bool = False
    content_policy: bool = False
    refuse: bool = False
    latency: float = 0.0
    hang: bool = False
    reset: bool = False
    first_token: float = 0.0
    chunk_delay: float = 0.0
    chunks: int | None = None
    cut: int | None = None
    stall: int | None = None
    end: int | None = None
    malformed: int | None = None
    no_done: bool = False
    error_event: bool = False
    stamp: bool = False
    body: str | None = None
    tool_call: str | None = None
    spec: str = ""

    @property
    def is_error(self) -> bool:
        """True when the request is answered with an error status instead of an answer."""
        return bool(self.status is not None and self.status >= 400 and self.body is None) or bool(
            self.quota or self.context_length or self.content_policy
        )

    @property
    def is_noop(self) -> bool:
        """True when the step changes nothing (`ok`)."""
        return replace(self, spec="") == NO_FAULT


NO_FAULT = Fault()

_FLAGS = frozenset(
    {
        "quota",
        "context_length",
        "content_policy",
        "refuse",
        "hang",
        "reset",
        "no_done",
        "error_event",
        "stamp",
    }
)
_FLOATS = frozenset(
    {
        "retry_after",
        "retry_after_date",
        "retry_after_ms",
        "reset_in",
        "latency",
        "first_token",
        "chunk_delay",
    }
)
_INTS = frozenset({"status", "chunks", "cut", "stall", "end"})
_TEXTS = {"message": "message", "type": "error_type"}
_ALIASES = {
    "retry": "retry_after",
    "slow": "latency",
    "ctx": "context_length",
    "tool": "tool_call",
}
_KNOWN = _FLAGS | _FLOATS | _INTS | {"vendor", "body", "malformed", "tool_call", "ok", *_TEXTS}


def _number(key: str, value: str, kind: type[float] | type[int]) -> float:
    try:
        number = kind(value)
    except ValueError:
        raise ValueError(f"fault item {key}={value!r}: expected a number") from None
    if number < 0:
        raise ValueError(f"fault item {key}={value!r}: must not be negative")
    return number


def _apply_item(values: dict[str, Any], key: str, value: str | None) -> None:
    key = _ALIASES.get(key, key)
    if key not in _KNOWN:
        raise ValueError(f"unknown fault item {key!r}; known: {', '.join(sorted(_KNOWN))}")
    if key == "ok":
        return
    if key in _FLAGS:
        if value not in (None, "", "1", "true"):
            raise ValueError(f"fault item {key} takes no value")
        values[key] = True
    elif key == "malformed":
        values[key] = 1 if value in (None, "") else int(_number(key, value, int))
    elif key == "tool_call":
        values[key] = value or ANY_TOOL
    elif value in (None, ""):
        raise ValueError(f"fault item {key} needs a value ({key}=...)")
    else:
        values[_TEXTS.get(key, key)] = _value(key, value)


def _value(key: str, value: str) -> Any:
    if key in _FLOATS:
        return _number(key, value, float)
    if key in _INTS:
        return int(_number(key, value, int))
    choices = {"vendor": VENDORS, "body": BAD_BODIES}.get(key)
    if choices is not None and value not in choices:
        raise ValueError(f"fault item {key}={value!r}: one of {', '.join(sorted(choices))}")
    return value


def _parse_step(text: str) -> Fault:
    values: dict[str, Any] = {}
    for raw in text.split(";"):
        item = raw.strip()
        if not item:
            continue
        key, sep, value = item.partition("=")
        _apply_item(values, key.strip().lower(), value.strip() if sep else None)
    status = values.get("status")
    if status is not None and not 100 <= status <= 599:
        raise ValueError(f"fault item status={status}: not an HTTP status")
    return Fault(**values, spec=text.strip())


_cache: dict[str, tuple[Fault, ...]] = {}


def parse_sequence(text: str) -> tuple[Fault, ...]:
    """Parse a fault spec into its steps (one step unless the spec contains `|`).

    Raises `ValueError` naming the bad item. Results are cached by text.
    """
    steps = _cache.get(text)
    if steps is None:
        steps = tuple(_parse_step(part) for part in text.split("|"))
        if len(_cache) < 4096:
            _cache[text] = steps
    return steps


def parse_fault(text: str) -> Fault:
    """Parse a single-step fault spec (`status=429;retry_after=8`)."""
    steps = parse_sequence(text)
    if len(steps) != 1:
        raise ValueError("expected one fault step, got a sequence")
    return steps[0]


_SHORTHAND_WORDS = {
    "hang": "hang",
    "reset": "reset",
    "refuse": "refuse",
    "quota": "quota",
    "ctx": "context_length",
    "policy": "content_policy",
    "nodone": "no_done",
    "malformed": "malformed",
    "errorevent": "error_event",
    "garbage": "body=garbage",
    "html": "body=html",
    "tool": "tool_call",
}
_SHORTHAND_VALUED = {
    "retry": "retry_after",
    "slow": "latency",
    "ttft": "first_token",
    "cut": "cut",
    "stall": "stall",
    "chunks": "chunks",
}
_STATUS = re.compile(r"^[1-5]\d\d$")


def _shorthand(model: str) -> str | None:
    """`mock-429-retry-8` -> `status=429;retry_after=8`; None when any word is unknown."""
    words = model.split("-")[1:]
    items: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if _STATUS.match(word):
            items.append(f"status={word}")
        elif word in _SHORTHAND_WORDS:
            items.append(_SHORTHAND_WORDS[word])
        elif word in _SHORTHAND_VALUED and i + 1 < len(words):
            items.append(f"{_SHORTHAND_VALUED[word]}={words[i + 1]}")
            i += 1
        elif word in VENDORS and items:
            items.append(f"vendor={word}")
        else:
            return None
        i += 1
    return ";".join(items) or None


def split_model(model: str) -> tuple[str, str | None]:
    """Split a model name into its base name and the fault spec it carries (or None).

    `gpt-4o-mini/fault:status=429` -> (`gpt-4o-mini`, `status=429`); `fault:hang` -> (`mock`,
    `hang`); `mock-429-retry-8` -> (`mock`, `status=429;retry_after=8`); anything else -> (model,
    None).
    """
    at = model.find(_MARKER)
    if at >= 0:
        base = model[:at].rstrip(_MODEL_SEPARATORS) or "mock"
        return base, model[at + len(_MARKER) :]
    if model.startswith("mock-"):
        spec = _shorthand(model)
        if spec is not None:
            return "mock", spec
    return model, None


@dataclass(slots=True)
class FaultBook:
    """Which fault each request gets: registered scripts, then sequence counters.

    `script(model, steps)` queues steps for requests naming `model` (its base name; `*` for
    any model, after the model's own queue); `pick` returns the fault for one request.
    Thread-unsafe by design: one event loop owns it.
    """

    scripts: dict[str, deque[Fault]] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)

    def script(self, model: str, steps: Iterable[str]) -> int:
        """Queue `steps` (each a single-step spec; `ok` answers) for `model`; returns the count."""
        parsed = [parse_fault(step) for step in steps]
        self.scripts.setdefault(model, deque()).extend(parsed)
        return len(parsed)

    def clear(self) -> None:
        """Forget every script and sequence position."""
        self.scripts.clear()
        self.counters.clear()

    def pick(self, base_model: str, spec: str | None) -> Fault:
        """The fault for one request whose model is `base_model` and whose spec is `spec`."""
        queue = self.scripts.get(base_model) or self.scripts.get(ANY_MODEL)
        if queue:
            return queue.popleft()
        if spec is None:
            return NO_FAULT
        steps = parse_sequence(spec)
        if len(steps) == 1:
            return steps[0]
        position = self.counters.get(spec, 0)
        self.counters[spec] = position + 1
        return steps[position] if position < len(steps) else NO_FAULT

    def pending(self) -> Mapping[str, list[str]]:
        """The scripted steps still queued, by model."""
        return {model: [f.spec for f in queue] for model, queue in self.scripts.items() if queue}


def describe(fault: Fault) -> dict[str, Any]:
    """The non-default fields of `fault` (for the request log)."""
    return {
        f.name: getattr(fault, f.name)
        for f in fields(fault)
        if f.name != "spec" and getattr(fault, f.name) != f.default
    }
