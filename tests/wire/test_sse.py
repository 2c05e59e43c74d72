"""The event-stream decoder and encoder."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from turnout.wire.sse import KEEPALIVE, EventTooLarge, SSEDecoder, SSEEvent, encode_event

STREAM = (
    b": a comment first\n\n"
    b'event: message_start\ndata: {"a": 1}\n\n'
    b"data: line one\ndata: line two\n\n"
    b"id: 7\ndata:no-space\n\n"
    b"event: ping\n\n"
    b"data: last\n\n"
)


def decode_all(data: bytes, cuts: list[int] | None = None) -> list[SSEEvent]:
    decoder = SSEDecoder()
    events: list[SSEEvent] = []
    start = 0
    for cut in sorted(cuts or []):
        events += decoder.feed(data[start:cut])
        start = cut
    events += decoder.feed(data[start:])
    return events + decoder.flush()


def test_fields_names_ids_and_multiline_data() -> None:
    """Event names, ids and data (multi-line joined with LF, one leading space dropped)."""
    events = decode_all(STREAM)
    assert [(e.event, e.data, e.id) for e in events] == [
        ("message_start", '{"a": 1}', None),
        (None, "line one\nline two", None),
        (None, "no-space", "7"),
        (None, "last", "7"),
    ]


def test_raw_is_the_exact_event_bytes_with_its_blank_line() -> None:
    """`raw` holds each event's own bytes, terminating blank line included."""
    events = decode_all(STREAM)
    assert events[0].raw == b'event: message_start\ndata: {"a": 1}\n\n'
    assert events[1].raw == b"data: line one\ndata: line two\n\n"
    assert events[3].raw == b"data: last\n\n"


def test_comments_and_events_without_data_are_not_dispatched() -> None:
    """A comment block, a keep-alive and an event with only a name yield nothing."""
    assert decode_all(KEEPALIVE + b"event: ping\n\n" + b":x\n\n") == []


def test_crlf_and_cr_line_endings() -> None:
    """CRLF and lone CR end lines like LF does."""
    crlf = decode_all(b"event: a\r\ndata: 1\r\n\r\n")
    cr = decode_all(b"event: a\rdata: 1\r\r")
    assert [(e.event, e.data) for e in crlf] == [("a", "1")]
    assert [(e.event, e.data) for e in cr] == [("a", "1")]
    assert crlf[0].raw == b"event: a\r\ndata: 1\r\n\r\n"


def test_crlf_split_between_reads_is_one_line_end() -> None:
    """A CR ending one read and the LF starting the next are one line end, not two."""
    decoder = SSEDecoder()
    assert decoder.feed(b"data: 1\r") == []
    assert decoder.feed(b"\ndata: 2\r") == []
    events = decoder.feed(b"\n\r\n")
    assert [(e.data, e.raw) for e in events] == [("1\n2", b"data: 1\r\ndata: 2\r\n\r\n")]


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_any_split_of_the_bytes_gives_the_same_events(cuts: list[int]) -> None:
    """Reads split anywhere (even inside CRLF or UTF-8) decode to the same events."""
    assert decode_all(STREAM, cuts) == decode_all(STREAM)


@given(st.lists(st.integers(min_value=0, max_value=40), max_size=8))
def test_any_split_of_crlf_bytes_gives_the_same_events(cuts: list[int]) -> None:
    """Split CRLF streams decode the same as whole ones."""
    data = "data: é😀\r\n\r\nevent: x\r\ndata: 2\r\n\r\n".encode()
    assert decode_all(data, cuts) == decode_all(data)


def test_flush_dispatches_an_event_missing_its_blank_line() -> None:
    """At end of stream, a pending event (even a cut-off last line) is dispatched."""
    decoder = SSEDecoder()
    assert decoder.feed(b'data: {"usage": 1}\n') == []
    assert [e.data for e in decoder.flush()] == ['{"usage": 1}']
    decoder = SSEDecoder()
    decoder.feed(b'data: {"cut')
    assert [e.raw for e in decoder.flush()] == [b'data: {"cut']
    assert decoder.flush() == []


def test_leading_bom_is_skipped_even_when_split() -> None:
    """A UTF-8 BOM before the first event is ignored."""
    decoder = SSEDecoder()
    assert decoder.feed(b"\xef\xbb") == []
    events = decoder.feed(b"\xbfdata: x\n\n")
    assert [(e.data, e.raw) for e in events] == [("x", b"data: x\n\n")]


def test_invalid_utf8_is_replaced_not_raised() -> None:
    """Undecodable bytes become U+FFFD instead of an exception."""
    assert decode_all(b"data: \xff\n\n")[0].data == "\ufffd"


@given(
    st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=40),
    st.one_of(st.none(), st.from_regex(r"[a-z_]{1,12}", fullmatch=True)),
)
def test_encode_event_round_trips_through_the_decoder(data: str, event: str | None) -> None:
    """Whatever the data (multi-line included), decoding an encoded event gives it back."""
    normalised = data.replace("\r\n", "\n").replace("\r", "\n")
    decoded = decode_all(encode_event(data, event))
    assert [(e.event, e.data) for e in decoded] == [(event, normalised)]


def test_encode_event_single_line_shape() -> None:
    """A one-line payload is `event:` (if any), one `data:` line and a blank line."""
    assert encode_event(b'{"a":1}') == b'data: {"a":1}\n\n'
    assert encode_event("x", "ping") == b"event: ping\ndata: x\n\n"


def test_an_event_at_the_limit_passes_one_past_it_raises() -> None:
    """An event of exactly `max_event_bytes` passes; one byte more raises EventTooLarge."""
    event = b"data: " + b"x" * 10 + b"\n\n"
    assert [e.data for e in SSEDecoder(max_event_bytes=len(event)).feed(event)] == ["x" * 10]
    with pytest.raises(EventTooLarge):
        SSEDecoder(max_event_bytes=len(event) - 1).feed(event)


def test_an_unfinished_event_past_the_limit_raises_as_it_grows() -> None:
    """An unfinished event raises as soon as its bytes pass the limit."""
    decoder = SSEDecoder(max_event_bytes=100)
    decoder.feed(b"data: ")
    for _ in range(13):  # 97 bytes so far
        assert decoder.feed(b"y" * 7) == []
    with pytest.raises(EventTooLarge):
        decoder.feed(b"y" * 7)


def test_events_before_the_one_too_large_are_returned_first() -> None:
    """Events before an oversized one are returned; the next call and `flush()` raise."""
    decoder = SSEDecoder(max_event_bytes=50)
    events = decoder.feed(b"data: a\n\ndata: b\n\ndata: " + b"z" * 60)
    assert [e.data for e in events] == ["a", "b"]
    with pytest.raises(EventTooLarge):
        decoder.feed(b"\n\n")
    with pytest.raises(EventTooLarge):
        decoder.flush()


_LINES = st.sampled_from(
    [
        b"data: {}",
        b"data: x",
        b"event: e",
        b"event: content_block_delta",
        b"id: 3",
        b": note",
        b"data:tight",
        b"retry: 1",
        b"",
    ]
)


@given(st.lists(_LINES, max_size=14))
def test_whole_events_read_at_once_match_byte_by_byte(lines: list[bytes]) -> None:
    """Events read whole from one buffer (the common shape at once) equal those read a byte at
    a time (line by line)."""
    data = b"".join(line + b"\n" for line in lines)
    assert decode_all(data) == decode_all(data, list(range(len(data))))
