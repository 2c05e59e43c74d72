"""The response parser's rules on their own: bytes in, status, headers, body, end and failure
out, with no socket and no event loop."""

from __future__ import annotations

import gzip

import pytest

from turnout.providers._http1_message import (
    HIGH_WATER,
    MAX_HEAD_BYTES,
    MAX_HEAD_LINES,
    RequestNotSent,
    ResponseParser,
)
from turnout.providers.transport import (
    AnswerTooLarge,
    BodyCutShort,
    HeadTooLarge,
    UnreadableResponse,
    UpstreamClosed,
)

LIMIT = 1024 * 1024


def parsed(
    data: bytes, *, limit: int = LIMIT, whole: bool = False, split: int = 0
) -> ResponseParser:
    """A parser fed `data` (in pieces of `split` bytes when given), reading a whole answer when
    `whole`."""
    parser = ResponseParser(limit)
    if whole:
        parser.read_whole()
    pieces = [data[i : i + split] for i in range(0, len(data), split)] if split else [data]
    for piece in pieces:
        parser.feed(piece)
    return parser


def head(*lines: str, status: str = "200 OK") -> bytes:
    return ("\r\n".join([f"HTTP/1.1 {status}", *lines]) + "\r\n\r\n").encode()


@pytest.mark.parametrize("split", [0, 1, 7])
def test_a_content_length_body_ends_at_its_length(split: int) -> None:
    """A body of Content-Length bytes ends the response, however the bytes are cut up; the
    connection may be reused."""
    parser = parsed(head("content-length: 5", "x-a: b") + b"hello", split=split)
    assert (parser.status, parser.headers["x-a"], parser.take()) == (200, "b", b"hello")
    assert parser.done
    assert parser.keep_alive
    assert parser.error is None


@pytest.mark.parametrize("split", [0, 1, 5])
def test_chunked_framing_with_extensions_and_trailers(split: int) -> None:
    """A chunked body is its chunks' data: extensions and trailers are dropped, the trailer is
    not a header."""
    body = b"3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nx-trailer: t\r\n\r\n"
    parser = parsed(head("transfer-encoding: chunked") + body, split=split)
    assert parser.take() == b"abcde"
    assert parser.done
    assert "x-trailer" not in parser.headers


def test_a_body_without_length_ends_with_a_clean_close() -> None:
    """Neither length nor chunked: the body runs until the connection closes cleanly, and the
    connection is not reused."""
    parser = parsed(head() + b"all of it")
    ended_before_the_close = parser.done
    parser.end(clean=True, request_refused=False)
    assert (ended_before_the_close, parser.done) == (False, True)
    assert not parser.keep_alive
    assert parser.take() == b"all of it"


def test_a_body_without_length_cut_by_a_reset_is_cut_short() -> None:
    """A close-delimited body ended by a reset is `BodyCutShort`, not a complete answer."""
    parser = parsed(head() + b"part")
    parser.end(clean=False, request_refused=False)
    assert isinstance(parser.error, BodyCutShort)


def test_no_content_has_no_body() -> None:
    """A 204 without length ends at its head."""
    parser = parsed(head(status="204 No Content"))
    assert parser.done
    assert parser.status == 204
    assert parser.take() == b""


def test_a_close_before_the_length_is_cut_short() -> None:
    """A connection that closes before Content-Length bytes came is `BodyCutShort`."""
    parser = parsed(head("content-length: 10") + b"abc")
    parser.end(clean=True, request_refused=False)
    assert isinstance(parser.error, BodyCutShort)


@pytest.mark.parametrize(("refused", "error"), [(False, UpstreamClosed), (True, RequestNotSent)])
def test_a_close_before_the_head(*, refused: bool, error: type[Exception]) -> None:
    """A close before the head is `RequestNotSent` only when the request's write was refused."""
    parser = parsed(b"HTTP/1.1 200 OK\r\n")
    parser.end(clean=True, request_refused=refused)
    assert type(parser.error) is error


@pytest.mark.parametrize("garbage", [b"SMTP ready\r\n\r\n", b"HTTP/1.1 abc OK\r\n\r\n"])
def test_a_malformed_status_line_is_unreadable(garbage: bytes) -> None:
    """Bytes that are not an HTTP/1.1 status line fail as `UnreadableResponse`."""
    parser = parsed(garbage)
    assert isinstance(parser.error, UnreadableResponse)
    assert not parser.head_done


def test_informational_heads_are_skipped() -> None:
    """1xx heads and their headers are skipped; the final head is the response's."""
    parser = parsed(head("x-early: 1", status="100 Continue") + head("content-length: 0"))
    assert parser.status == 200
    assert "x-early" not in parser.headers
    assert parser.done


def test_a_header_on_several_lines_is_joined() -> None:
    """A header sent on several lines reads as one comma-joined value."""
    parser = parsed(head("x-a: 1", "X-A: 2", "x-a: 3", "content-length: 0"))
    assert parser.headers["x-a"] == "1, 2, 3"


def test_connection_close_takes_away_keep_alive() -> None:
    """A response that says `Connection: close` ends, but its connection is not reused."""
    parser = parsed(head("connection: close", "content-length: 2") + b"ok")
    assert parser.done
    assert not parser.keep_alive


def test_bytes_after_the_response_take_away_keep_alive() -> None:
    """Bytes after the end of the response leave it as it was and its connection unusable."""
    parser = parsed(head("content-length: 2") + b"ok")
    parser.feed(b"HTTP/1.1 200 OK\r\n")
    assert parser.done
    assert not parser.keep_alive
    assert parser.take() == b"ok"


def test_a_second_response_in_the_same_bytes_is_not_read_into_the_first() -> None:
    """A response nobody asked for, arriving with the first, changes neither its status nor its
    body, and takes away its keep-alive."""
    parser = parsed(head("content-length: 2") + b"ok" + head("content-length: 3", status="404 X"))
    parser.feed(b"bad")
    assert (parser.status, parser.take(), parser.keep_alive) == (200, b"ok", False)


def test_the_header_line_bound() -> None:
    """`MAX_HEAD_LINES` header lines are read; one more fails as `HeadTooLarge`."""
    lines = [f"x-{i}: v" for i in range(MAX_HEAD_LINES - 1)]
    assert parsed(head(*lines, "content-length: 0")).done
    parser = parsed(head(*lines, "x-last: v", "content-length: 0"))
    assert isinstance(parser.error, HeadTooLarge)
    assert "header lines" in str(parser.error)
    assert not parser.headers


def test_the_head_byte_bound_fails_before_the_head_ends() -> None:
    """A head growing past `MAX_HEAD_BYTES` fails as soon as it passes, before its end came."""
    parser = ResponseParser(LIMIT)
    parser.feed(b"HTTP/1.1 200 OK\r\nx-flood: ")
    parser.feed(b"a" * MAX_HEAD_BYTES)
    assert isinstance(parser.error, HeadTooLarge)
    assert "KiB" in str(parser.error)


def test_a_stream_keeps_every_byte_it_is_given() -> None:
    """A stream's bytes wait unread for its reader, the limit notwithstanding (the reader
    bounds its own events)."""
    parser = parsed(head("content-length: 3000") + b"s" * 3000, limit=1000)
    assert parser.error is None
    assert parser.unread == 3000
    assert parser.take() == b"s" * 3000


def test_a_whole_answer_at_the_limit_is_read() -> None:
    """A whole answer of exactly `limit` bytes is read."""
    parser = ResponseParser(10)
    parser.read_whole()
    parser.feed(head("content-length: 10") + b"x" * 10)
    assert parser.done
    assert parser.take() == b"x" * 10


def test_a_whole_answer_over_the_limit_fails_and_drops_its_bytes() -> None:
    """A whole answer past its limit fails as `AnswerTooLarge` and keeps none of its bytes."""
    size = HIGH_WATER + 10
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (size, b"x" * size)
    parser = parsed(head("transfer-encoding: chunked") + chunked, limit=HIGH_WATER, whole=True)
    assert isinstance(parser.error, AnswerTooLarge)
    assert parser.unread == 0
    assert not parser.chunks


def test_a_declared_length_over_the_limit_fails_past_high_water() -> None:
    """An uncompressed answer whose Content-Length passes the limit fails once HIGH_WATER bytes
    came, not at its end."""
    limit = 4 * HIGH_WATER
    parser = ResponseParser(limit)
    parser.read_whole()
    parser.feed(head(f"content-length: {limit + 1}") + b"x" * (HIGH_WATER + 1))
    assert isinstance(parser.error, AnswerTooLarge)


def test_read_whole_looks_at_what_already_waits() -> None:
    """Bytes that came before `read_whole` count towards the limit."""
    parser = parsed(head("content-length: 3000") + b"s" * 3000, limit=1000)
    parser.read_whole()
    assert isinstance(parser.error, AnswerTooLarge)


def test_a_compressed_body_is_decoded() -> None:
    """A gzip body is handed over decoded."""
    packed = gzip.compress(b"hello " * 100)
    parser = parsed(head("content-encoding: gzip", f"content-length: {len(packed)}") + packed)
    assert parser.take() == b"hello " * 100


def test_a_compression_bomb_is_stopped_at_the_limit() -> None:
    """A small compressed body that decodes past the limit fails without being inflated whole."""
    bomb = gzip.compress(b"\0" * (8 * 1024 * 1024))
    parser = parsed(
        head("content-encoding: gzip", f"content-length: {len(bomb)}") + bomb,
        limit=1024,
        whole=True,
    )
    assert isinstance(parser.error, AnswerTooLarge)
    assert parser.unread == 0


def test_a_bad_compressed_body_is_unreadable() -> None:
    """A body that says gzip but is not fails as `UnreadableResponse`."""
    parser = parsed(head("content-encoding: gzip", "content-length: 8") + b"notgzip!")
    assert isinstance(parser.error, UnreadableResponse)
