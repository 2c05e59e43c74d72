"""Reading and rewriting JSON bodies for the codecs.

Two kinds of failure, kept apart on purpose: a caller's body that does not fit the format is the
caller's fault (`MalformedRequest`, an `InvalidRequest` with status 400, the message naming the
field, e.g. `messages[2].content: expected a string or a list of parts`); an upstream body we
cannot read is the provider's (`ProviderUnavailable`, error class `provider_error`, so the route
may fail over).

Plain dict walking with orjson: no schema library on the hot path. Numbers are checked against
the ranges the vendors themselves accept, and no tighter (`TOKEN_LIMIT` …): a value every vendor
would refuse is refused here, before a call, and one that some target of the format takes is
left to the target.

Translation refuses to guess (`refuse_unknown`, `refuse_emptied`): a content block the caller's own
format does not define is kept verbatim as an `UnknownBlock` (a target of that format receives
it, and judges it), and encoding it into the other family is a 400 naming its path; so is a
message every part of which the other family would drop, rather than an empty message sent in
its place.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

import orjson

from turnout.errors import MalformedRequest, ProviderUnavailable
from turnout.wire.codec import codec_for
from turnout.wire.model import NativeBlock, TextPart

if TYPE_CHECKING:
    from turnout.wire.model import ChatRequest, Part, ToolCall, WireFormat

__all__ = [
    "OBJECT",
    "TOKEN_LIMIT",
    "UnknownBlock",
    "as_list",
    "as_object",
    "caller_path",
    "data_url",
    "decode_blocks",
    "dump_arguments",
    "invalid",
    "load_request",
    "load_upstream",
    "opt_bool",
    "opt_int",
    "opt_int_in",
    "opt_number",
    "opt_number_in",
    "opt_object",
    "opt_str",
    "parse_arguments",
    "refuse_emptied",
    "refuse_unknown",
    "rewrite",
    "split_data_url",
    "upstream_invalid",
]


OBJECT = (dict, Mapping)
"""What a JSON object may be: a dict (checked first, as orjson makes) or any mapping."""
TOKEN_LIMIT = 2**31 - 1
"""The largest `max_tokens` passed on: upstreams read token counts as 32-bit integers."""


@dataclass(slots=True, frozen=True)
class UnknownBlock(NativeBlock):
    """A caller's content block of a type its own format does not define (yet), verbatim.

    A target of that format receives it as sent; translating it is refused
    (`refuse_unknown`), naming `path`, the block's place in the caller's body.
    """

    path: str = ""


def invalid(path: str, expected: str) -> MalformedRequest:
    """The error for a caller's field that does not have the expected shape."""
    return MalformedRequest(f"{path}: expected {expected}")


def out_of_range(path: str, rule: str, value: object) -> MalformedRequest:
    """The error for a caller's value of the right type outside the range vendors accept."""
    return MalformedRequest(f"{path}: must be {rule} (got {value!r})")


def refuse_unknown(parts: Iterable[Part], target: WireFormat) -> None:
    """Raise the 400 for the first `UnknownBlock` of another format among `parts`."""
    for part in parts:
        if type(part) is UnknownBlock and part.format != target:
            kind = orjson.dumps(part.block.get("type")).decode()
            raise MalformedRequest(
                f"{part.path}.type: unknown content block {kind}, which cannot be "
                f"translated to {target}"
            )


def refuse_emptied(parts: Iterable[Part], target: WireFormat, where: Callable[[], str]) -> None:
    """Raise the 400 for a message whose encoding for `target` came out empty, unless it was
    empty to begin with.

    The caller gave it something (anything but empty text) that `target` drops, and an empty
    message, or none, would change what the model is asked. A message that was empty from the
    start is the caller's own choice and is left alone. `where` names the message (called only
    for the error).
    """
    dropped = {_kind(part): None for part in parts if not _is_empty_text(part)}
    if dropped:
        raise MalformedRequest(
            f"{where()}: would be sent empty to {target}, which cannot carry its "
            f"{', '.join(dropped)} content"
        )


def _is_empty_text(part: Part) -> bool:
    return isinstance(part, TextPart) and not part.text


def _kind(part: Part) -> str:
    if isinstance(part, NativeBlock):
        return str(part.block.get("type", "native"))
    return part.type


def upstream_invalid(what: str) -> ProviderUnavailable:
    """The error for an upstream body the codec cannot read (`provider_error`)."""
    return ProviderUnavailable(f"unparseable upstream body: {what}", reason="unparseable body")


def decode_blocks(
    blocks: list[Any], decode: Callable[[Mapping[str, Any], list[Part], list[ToolCall]], None]
) -> tuple[list[Part], list[ToolCall]]:
    """An upstream answer's content blocks -> its parts and tool calls (`decode` sorts one
    block into them); a block that is not an object raises `ProviderUnavailable`."""
    content: list[Part] = []
    calls: list[ToolCall] = []
    for block in blocks:
        if not isinstance(block, OBJECT):
            raise upstream_invalid("a content block is not an object")
        decode(block, content, calls)
    return content, calls


def load_request(body: bytes | Mapping[str, Any]) -> Mapping[str, Any]:
    """A caller's body as a JSON object (bytes are parsed; a mapping is used as is)."""
    if isinstance(body, OBJECT):
        return body
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise MalformedRequest(f"request body: invalid JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise invalid("request body", "a JSON object")
    return value


def load_upstream(body: bytes | Mapping[str, Any]) -> Mapping[str, Any]:
    """An upstream body as a JSON object; anything else raises `ProviderUnavailable`."""
    if isinstance(body, OBJECT):
        return body
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise upstream_invalid(f"invalid JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise upstream_invalid("not a JSON object")
    return value


def as_object(value: Any, path: str) -> Mapping[str, Any]:
    """`value` when it is a JSON object, else the 400 naming `path`."""
    if not isinstance(value, OBJECT):
        raise invalid(path, "an object")
    return value


def as_list(value: Any, path: str) -> list[Any]:
    """`value` when it is a JSON array, else the 400 naming `path`."""
    if not isinstance(value, list):
        raise invalid(path, "a list")
    return value


def _wrong(path: str, expected: str) -> NoReturn:
    raise invalid(path, expected)


def opt_str(obj: Mapping[str, Any], key: str, path: str) -> str | None:
    """`obj[key]` as a string, None when absent or null."""
    value = obj.get(key)
    if value is None or isinstance(value, str):
        return value
    _wrong(f"{path}.{key}" if path else key, "a string")


def opt_int(obj: Mapping[str, Any], key: str, path: str) -> int | None:
    """`obj[key]` as an integer (booleans refused), None when absent or null."""
    value = obj.get(key)
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    _wrong(f"{path}.{key}" if path else key, "an integer")


def opt_int_in(obj: Mapping[str, Any], key: str, low: int, high: int | None) -> int | None:
    """Top-level `obj[key]` as an integer from `low` to `high` (None: no upper bound), None
    when absent or null. Checked inline: these run on every request."""
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        _wrong(key, "an integer")
    if value < low or (high is not None and value > high):
        rule = f"from {low} to {high}" if high is not None else f"at least {low}"
        raise out_of_range(key, f"a whole number {rule}", value)
    return value


def opt_number_in(obj: Mapping[str, Any], key: str, low: float, high: float) -> float | None:
    """Top-level `obj[key]` as a float from `low` to `high` (ints accepted, booleans refused),
    None when absent or null."""
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool):
        _wrong(key, "a number")
    if not low <= value <= high:
        raise out_of_range(key, f"a number from {low:g} to {high:g}", value)
    return float(value)


def opt_number(obj: Mapping[str, Any], key: str, path: str) -> float | None:
    """`obj[key]` as a float (ints accepted, booleans refused), None when absent or null."""
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value) if isinstance(value, int) else value
    _wrong(f"{path}.{key}" if path else key, "a number")


def opt_bool(obj: Mapping[str, Any], key: str, path: str) -> bool | None:
    """`obj[key]` as a boolean, None when absent or null."""
    value = obj.get(key)
    if value is None or isinstance(value, bool):
        return value
    _wrong(f"{path}.{key}" if path else key, "a boolean")


def opt_object(obj: Mapping[str, Any], key: str, path: str) -> dict[str, Any] | None:
    """`obj[key]` as a (copied) JSON object, None when absent or null."""
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, OBJECT):
        return dict(value)
    _wrong(f"{path}.{key}" if path else key, "an object")


def split_data_url(url: str) -> tuple[str, str] | None:
    """`(media_type, base64 data)` of a base64 `data:` URL, else None."""
    if not url.startswith("data:"):
        return None
    head, sep, data = url.partition(",")
    if not sep or not head.endswith(";base64"):
        return None
    return head[5:-7] or "application/octet-stream", data


def data_url(media_type: str | None, data: str) -> str:
    """A base64 `data:` URL."""
    return f"data:{media_type or 'application/octet-stream'};base64,{data}"


def parse_arguments(text: str) -> dict[str, Any]:
    """Tool-call arguments (JSON text) as an object; `{}` when empty, invalid or not an object.

    Models occasionally emit broken argument JSON; a family that needs an object (Anthropic
    `tool_use.input`) gets an empty one rather than a failed translation.
    """
    if not text:
        return {}
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def dump_arguments(value: Any) -> str:
    """A tool-call input object as JSON text."""
    return orjson.dumps(value).decode()


def rewrite(
    source: bytes,
    edit: Callable[[dict[str, Any]], bool],
    parsed: Mapping[str, Any] | None = None,
) -> bytes:
    """Parse a caller's body, apply `edit` (which says whether it changed anything), re-serialise.

    `parsed`, when given, is `source` already parsed (and not changed since): `edit` then works
    on a copy of it (of its top level and its `metadata`, the only parts an edit changes)
    instead of a second parse. When nothing changed, the original bytes are returned
    untouched. Re-serialising keeps every value and key order; only insignificant whitespace
    and escapes may differ (and integers beyond 64 bits become floats, as orjson reads them).
    """
    if parsed is not None:
        body = dict(parsed)
        metadata = body.get("metadata")
        if isinstance(metadata, dict):
            body["metadata"] = dict(metadata)
    else:
        body = dict(load_request(source))
    if not edit(body):
        return source
    return orjson.dumps(body)


def caller_path(request: ChatRequest, index: int) -> str:
    """Where `request.messages[index]` is in the caller's own body (found again by decoding
    it, in the caller's format), else its neutral position. Only error paths ask."""
    source = request.source
    codec = codec_for(source.format) if source is not None else None
    paths = codec.message_paths(source.body) if source and codec and codec.message_paths else []
    return paths[index] if index < len(paths) else f"messages[{index}]"
