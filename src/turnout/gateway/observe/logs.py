"""The gateway's log lines: one access line per request, and a WARNING line per failover,
fallback-route hop, stream broken after its first token, breaker transition and park (a
target skipped for its health: once per burst, `turnout.gateway.observe.skips`).

Rule 1: every line is a logger call whose message is a fixed event word (`access`, `failover`,
`fallback_route`, `stream_broken`, `health`, `skips`) with its fields in `extra["fields"]`; the text
format appends them as `name=value`, the JSON format writes one object per line under the same
names.
Rule 2: fields come only from the routing record, the health event and the exchange's status,
path and key name: never a header, a body or a credential, so no secret reaches a line.
Rule 3: `configure_logging` installs a `LogWriter`, which writes lines out in batches (a WARNING
or worse line at once, with the lines before it). While it is the `turnout` loggers' only
handler (beside the library's NullHandler) and nothing filters the access logger, the access
line is built straight from its values and handed to it, without a log record or a formatter:
the same line, at a fraction of the cost. Otherwise it goes through `logging` like any line.
Rule 4: a text value with a space, a quote, an `=` or a line break is quoted (a line break
escaped as `\\n`), so one line stays one line whatever a caller sent.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from typing import TYPE_CHECKING, Any, Final

import orjson

from turnout.gateway.observe.log_writer import LogWriter

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import TextIO

    from turnout.record import AttemptEntry, RoutingRecord
    from turnout.routing.health import HealthEvent

__all__ = [
    "ACCESS",
    "ACCESS_FIELDS",
    "EVENTS",
    "LOG_FORMATS",
    "LOG_LEVELS",
    "ROUTED_FIELDS",
    "JsonFormatter",
    "TextFormatter",
    "configure_logging",
    "configure_logging_from_env",
    "log_access",
    "log_failover",
    "log_fallback_route",
    "log_health",
    "log_skips",
    "log_stream_broken",
]

LOG_LEVELS: Final = ("debug", "info", "warning", "error")
LOG_FORMATS: Final = ("text", "json")
LEVEL_ENV: Final = "TURNOUT_LOG_LEVEL"
FORMAT_ENV: Final = "TURNOUT_LOG_FORMAT"

ACCESS = logging.getLogger("turnout.access")
"""One INFO line per request."""
EVENTS = logging.getLogger("turnout.events")
"""Failovers, fallback-route hops and health transitions."""


ACCESS_FIELDS: Final = ("request_id", "method", "path", "status", "key", "duration_ms")
"""The access line's fields for every request, in order."""
ROUTED_FIELDS: Final = (
    "route", "target", "provider", "model", "attempts", "failovers", "overhead_ms",
    "input_tokens", "output_tokens", "cost_usd", "cache",
)  # fmt: skip
"""The access line's further fields for a routed request, in order."""

_ALL_FIELDS: Final = ACCESS_FIELDS + ROUTED_FIELDS
_ROOT: Final = logging.getLogger("turnout")
_INFO: Final = logging.INFO

_installed: LogWriter | None = None
"""The writer `configure_logging` installed last."""
_json = False
"""Whether it writes JSON."""

# The millisecond `_iso` last rendered and its text, and the same for the second (tuples,
# replaced whole, so any thread may read them).
_last: tuple[int, str] = (-1, "")
_second: tuple[int, str] = (-1, "")


def _iso(epoch: float) -> str:
    """`epoch` as ISO 8601 UTC with milliseconds (`2026-01-02T03:04:05.678Z`), rounded to the
    microsecond first as `datetime` rounds it."""
    global _last, _second  # noqa: PLW0603 - caches of the last millisecond and second rendered
    whole = int(epoch)
    millis = whole * 1000 + int((epoch - whole) * 1_000_000 + 0.5) // 1000
    last = _last
    if last[0] == millis:
        return last[1]
    whole, part = divmod(millis, 1000)
    second = _second
    if second[0] != whole:
        second = _second = (whole, time.strftime("%Y-%m-%dT%H:%M:%S.", time.gmtime(whole)))
    text = second[1] + _MILLIS[part]
    _last = (millis, text)
    return text


_MILLIS: Final = tuple(f"{millis:03d}Z" for millis in range(1000))


def _fields(record: logging.LogRecord) -> Mapping[str, Any]:
    fields: Mapping[str, Any] | None = getattr(record, "fields", None)
    return fields if fields is not None else {}


def _text_value(value: Any) -> str:
    if value is None:
        return "-"
    kind = type(value)
    if kind is int or kind is float or kind is bool:
        return str(value)
    text = value if kind is str else str(value)
    if not text or " " in text or '"' in text or "=" in text or "\n" in text or "\r" in text:
        escaped = text.replace("\\", "\\\\").replace('"', '\\"')
        return '"' + escaped.replace("\n", "\\n").replace("\r", "\\r") + '"'
    return text


class TextFormatter(logging.Formatter):
    """`TIME LEVEL LOGGER EVENT name=value …` (values with spaces quoted; None as `-`)."""

    def format(self, record: logging.LogRecord) -> str:
        head = f"{_iso(record.created)} {record.levelname} {record.name} {record.getMessage()}"
        pairs = " ".join(f"{name}={_text_value(value)}" for name, value in _fields(record).items())
        line = f"{head} {pairs}" if pairs else head
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object per line: `time`, `level`, `logger`, `event`, then the event's fields
    (and `exception` when there is one)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": _iso(record.created),
            "level": record.levelname,
            "logger": record.name,
            "event": record.getMessage(),
        }
        line.update(_fields(record))
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()


def configure_logging(
    level: str = "info", fmt: str = "text", *, stream: TextIO | None = None
) -> LogWriter:
    """Send the `turnout` loggers' lines at `level` and above to `stream` (stderr) in `fmt`
    (`text` or `json`), through a `LogWriter` (lines written out in batches, Rule 3), replacing
    (and closing) a handler an earlier call installed. The choice is also put in the
    environment, so the worker processes of `--workers N` log the same way."""
    global _installed, _json
    if level not in LOG_LEVELS:
        raise ValueError(f"log level must be one of {', '.join(LOG_LEVELS)} (got {level!r})")
    if fmt not in LOG_FORMATS:
        raise ValueError(f"log format must be one of {', '.join(LOG_FORMATS)} (got {fmt!r})")
    os.environ[LEVEL_ENV] = level
    os.environ[FORMAT_ENV] = fmt
    handler = LogWriter(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    for old in [h for h in _ROOT.handlers if getattr(h, "turnout_owned", False)]:
        _ROOT.removeHandler(old)
        old.close()
    handler.turnout_owned = True  # type: ignore[attr-defined]
    _ROOT.addHandler(handler)
    _ROOT.setLevel(level.upper())
    _ROOT.propagate = False
    _installed, _json = handler, fmt == "json"
    return handler


def configure_logging_from_env() -> None:
    """In a worker process: configure as the parent did (`configure_logging`), if it did."""
    level = os.environ.get(LEVEL_ENV)
    if level is not None:
        configure_logging(level, os.environ.get(FORMAT_ENV, "text"))


def log_health(event: HealthEvent, key: str) -> None:
    """A WARNING line for a breaker transition or a park, INFO for a cooldown."""
    level = logging.INFO if event.to == "cooling_down" else logging.WARNING
    if not EVENTS.isEnabledFor(level):
        return
    seconds = None if event.until is None else round(max(0.0, event.until - event.at), 3)
    fields = {"key": key, "to": event.to, "failures": event.failures, "seconds": seconds}
    EVENTS.log(level, "health", extra={"fields": fields})


def log_failover(record: RoutingRecord, entry: AttemptEntry, to: AttemptEntry) -> None:
    """A WARNING line: the route moved on from `entry` to `to`."""
    if not EVENTS.isEnabledFor(logging.WARNING):
        return
    fields = {
        "request_id": record.request_id,
        "route": record.route,
        "from_target": entry.target,
        "provider": entry.provider,
        "model": entry.model,
        "outcome": entry.outcome,
        "class": entry.error_class,
        "status": entry.status,
        "reason": entry.reason,
        "to_target": to.target,
        "attempt": entry.index,
    }
    EVENTS.warning("failover", extra={"fields": fields})


def log_skips(key: str, requests: int, seconds: float) -> None:
    """A WARNING line: a burst of skips of the health key `key` ended; `requests` skipped it
    over `seconds` (the first of them had its `failover` line)."""
    if EVENTS.isEnabledFor(logging.WARNING):
        fields = {"key": key, "requests": requests, "seconds": seconds}
        EVENTS.warning("skips", extra={"fields": fields})


def log_stream_broken(record: RoutingRecord, entry: AttemptEntry) -> None:
    """A WARNING line: the stream `entry` was answering broke after its first token (the
    caller got part of an answer; nothing could fail over)."""
    if not EVENTS.isEnabledFor(logging.WARNING):
        return
    fields = {
        "request_id": record.request_id,
        "route": record.route,
        "target": entry.target,
        "provider": entry.provider,
        "model": entry.model,
        "class": entry.error_class,
        "status": entry.status,
        "reason": entry.reason,
        "attempt": entry.index,
    }
    EVENTS.warning("stream_broken", extra={"fields": fields})


def log_fallback_route(record: RoutingRecord) -> None:
    """A WARNING line: the request went on to a fallback route."""
    if not EVENTS.isEnabledFor(logging.WARNING):
        return
    fields = {
        "request_id": record.request_id,
        "route": record.route,
        "fallback_route": record.fallback_route,
        "kind": record.fallback_kind,
        "answered": record.answered,
    }
    EVENTS.warning("fallback_route", extra={"fields": fields})


def log_access(values: tuple[Any, ...]) -> None:
    """The request's INFO access line: `values` in the order of `ACCESS_FIELDS`, followed for a
    routed request by those of `ROUTED_FIELDS` (Rule 3: straight to the writer when it can)."""
    if not ACCESS.isEnabledFor(_INFO):
        return
    writer = _direct_writer()
    if writer is None:
        fields = dict(zip(_ALL_FIELDS, values, strict=False))
        ACCESS.info("access", extra={"fields": fields})
    elif _json:
        writer.add(_json_access(values))
    else:
        writer.add(_text_access(values))


def _json_access(values: tuple[Any, ...]) -> str:
    """The access line as `JsonFormatter` writes it, built without a log record: a routed
    request's object made in one go (keys in the order of `ACCESS_FIELDS` and `ROUTED_FIELDS`;
    a dict grown key by key is resized on the way)."""
    if len(values) == len(_ALL_FIELDS):
        (request_id, method, path, status, key, duration, route, target, provider, model,
         attempts, failovers, overhead, inputs, outputs, cost, cache) = values  # fmt: skip
        line = {
            "time": _iso(time.time()), "level": "INFO", "logger": "turnout.access",
            "event": "access", "request_id": request_id, "method": method, "path": path,
            "status": status, "key": key, "duration_ms": duration, "route": route,
            "target": target, "provider": provider, "model": model, "attempts": attempts,
            "failovers": failovers, "overhead_ms": overhead, "input_tokens": inputs,
            "output_tokens": outputs, "cost_usd": cost, "cache": cache,
        }  # fmt: skip
    else:
        line = {"time": _iso(time.time()), "level": "INFO", "logger": "turnout.access"}
        line["event"] = "access"
        line.update(zip(_ALL_FIELDS, values, strict=False))
    return orjson.dumps(line, default=str).decode()


def _text_access(values: tuple[Any, ...]) -> str:
    """The access line as `TextFormatter` writes it, built without a log record. Words that
    come back request after request (method, path, key, route, target …) are looked up in
    `_WORDS` instead of being checked again."""
    words = _WORDS
    head = (
        f"{_iso(time.time())} INFO turnout.access access request_id={_text_value(values[0])}"
        f" method={words.get(values[1]) or _word(values[1])}"
        f" path={words.get(values[2]) or _word(values[2])}"
        f" status={_count_text(values[3])} key={words.get(values[4]) or _word(values[4])}"
        f" duration_ms={_millis_text(values[5])}"
    )
    if len(values) == len(ACCESS_FIELDS):
        return head
    (
        route,
        target,
        provider,
        model,
        attempts,
        failovers,
        overhead,
        inputs,
        outputs,
        cost,
        cache,
    ) = values[6:]
    return (
        f"{head} route={words.get(route) or _word(route)}"
        f" target={words.get(target) or _word(target)}"
        f" provider={words.get(provider) or _word(provider)}"
        f" model={words.get(model) or _word(model)}"
        f" attempts={_count_text(attempts)} failovers={_count_text(failovers)}"
        f" overhead_ms={_millis_text(overhead)}"
        f" input_tokens={_count_text(inputs)} output_tokens={_count_text(outputs)}"
        f" cost_usd={'-' if cost is None else cost}"
        f" cache={words.get(cache) or _word(cache)}"
    )


def _count_text(value: Any) -> str:
    """A count (a status, tokens …) as `str` writes it, from a table below 10,000: cheaper
    than writing an int out."""
    if type(value) is int and 0 <= value < _COUNTS_LIMIT:
        return _COUNTS[value]
    return _text_value(value)


def _millis_text(value: Any) -> str:
    """A duration in milliseconds as `str` writes it, from whole microseconds when it is one:
    cheaper than writing a float out."""
    if type(value) is float:
        micros = int(value * 1000 + 0.5)
        if 0 <= micros < _MICROS_LIMIT and micros / 1000 == value:
            return f"{_count_text(micros // 1000)}.{_FRACTIONS[micros % 1000]}"
    return _text_value(value)


_COUNTS_LIMIT: Final = 10_000
_COUNTS: Final = tuple(str(count) for count in range(_COUNTS_LIMIT))
_FRACTIONS: Final = tuple(f"{micros:03d}".rstrip("0") or "0" for micros in range(1000))
_MICROS_LIMIT: Final = 10**15  # below it, `str` of a float writes no exponent

_WORDS: dict[Any, str] = {None: "-"}
"""Text values rendered already (at most `_WORDS_LIMIT` of at most `_WORD_LENGTH` characters)."""
_WORDS_LIMIT: Final = 4096
_WORD_LENGTH: Final = 200


def _word(value: Any) -> str:
    text = _text_value(value)
    if len(text) > _WORD_LENGTH:  # a caller's long path is not worth keeping
        return text
    words = _WORDS
    if len(words) >= _WORDS_LIMIT:
        words.clear()
        words[None] = "-"
    words[value] = text
    return text


def _direct_writer() -> LogWriter | None:
    """Rule 3: the installed writer, while an access line handed to it straight is exactly what
    `logging` would have written; else None."""
    writer = _installed
    if writer is None or ACCESS.handlers or ACCESS.filters or not ACCESS.propagate:
        return None
    if _ROOT.filters or writer.filters or writer.level > _INFO:
        return None
    found = False
    for handler in _ROOT.handlers:  # the writer, and the library's NullHandler
        if handler is writer:
            found = True
        elif type(handler) is not logging.NullHandler:
            return None
    return writer if found else None
