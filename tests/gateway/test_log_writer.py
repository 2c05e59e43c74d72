"""The gateway's log writer: lines written out in batches, in order, at once for WARNING and
worse, past the size limit, on flush and `interval` seconds later (on a fake sleep)."""

from __future__ import annotations

import io
import logging
import subprocess
import sys
import threading
from typing import TYPE_CHECKING

from turnout.gateway.observe.log_writer import LogWriter

if TYPE_CHECKING:
    import pytest


class Stream(io.StringIO):
    """A stream that counts its writes and says when one happened."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0
        self.written = threading.Event()

    def write(self, text: str) -> int:
        self.writes += 1
        count = super().write(text)
        self.written.set()
        return count


class Sleep:
    """The writer thread's sleep: records the interval and returns once the test allows."""

    def __init__(self) -> None:
        self.asked: list[float] = []
        self.go = threading.Event()

    def __call__(self, seconds: float) -> None:
        self.asked.append(seconds)
        self.go.wait(5)


def _record(level: int, message: str) -> logging.LogRecord:
    return logging.LogRecord("turnout.test", level, __file__, 0, message, (), None)


def _writer(stream: Stream, **options: object) -> LogWriter:
    writer = LogWriter(stream, sleep=Sleep(), **options)  # type: ignore[arg-type]
    writer.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    return writer


def test_lines_wait_in_the_buffer_until_flush() -> None:
    """INFO lines are not written one by one: one write holds them all, in order."""
    stream = Stream()
    writer = _writer(stream)
    writer.handle(_record(logging.INFO, "one"))
    writer.add("two")
    assert stream.getvalue() == ""
    writer.flush()
    assert (stream.getvalue(), stream.writes) == ("INFO one\ntwo\n", 1)


def test_a_warning_writes_out_every_line_before_it() -> None:
    """A WARNING line is written at once, after the lines handed over before it."""
    stream = Stream()
    writer = _writer(stream)
    writer.add("access 1")
    writer.handle(_record(logging.WARNING, "failover"))
    assert stream.getvalue() == "access 1\nWARNING failover\n"


def test_the_buffer_is_written_out_past_its_limit() -> None:
    """Past `limit` characters the buffer is written without waiting for the interval."""
    stream = Stream()
    writer = _writer(stream, limit=10)
    writer.add("12345")
    assert stream.getvalue() == ""
    writer.add("67890")
    assert stream.getvalue() == "12345\n67890\n"


def test_the_writer_thread_writes_the_buffer_after_the_interval() -> None:
    """The first line into an empty buffer wakes the writer thread, which sleeps `interval`
    seconds and then writes out everything handed over meanwhile."""
    stream = Stream()
    sleep = Sleep()
    writer = LogWriter(stream, interval=0.25, sleep=sleep)
    writer.add("first")
    writer.add("second")
    assert stream.getvalue() == ""
    sleep.go.set()
    assert stream.written.wait(5)
    assert stream.getvalue() == "first\nsecond\n"
    assert sleep.asked[0] == 0.25
    writer.close()


def test_interval_zero_and_a_terminal_write_each_line_at_once() -> None:
    """With `interval` 0, or on a terminal, every line is written as it comes."""
    stream = Stream()
    writer = LogWriter(stream, interval=0)
    writer.add("now")
    assert stream.getvalue() == "now\n"

    class Terminal(Stream):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    LogWriter(terminal).add("now too")
    assert terminal.getvalue() == "now too\n"


def test_close_writes_out_what_is_left() -> None:
    """Closing the writer (as `logging.shutdown` does at exit) writes out the buffer."""
    stream = Stream()
    writer = _writer(stream)
    writer.add("last words")
    writer.close()
    assert stream.getvalue() == "last words\n"


EXITING = """
from turnout.gateway.observe.logs import configure_logging, log_access
configure_logging("info", "text")
log_access(("req-exit", "POST", "/v1/chat/completions", 200, None, 1.5))
"""


def test_a_process_that_exits_writes_its_buffered_lines() -> None:
    """A line still buffered when the process exits normally reaches stderr."""
    done = subprocess.run(  # noqa: S603 - this interpreter, a fixed script
        [sys.executable, "-c", EXITING], capture_output=True, text=True, timeout=60, check=True
    )
    assert "access request_id=req-exit " in done.stderr


def test_a_closed_stream_and_a_closed_stderr_do_not_raise(monkeypatch: pytest.MonkeyPatch) -> None:
    """Writing to a stream that was closed, with stderr closed too (nowhere to report the
    failure), drops the lines instead of raising into the caller or the writer thread."""
    stream = Stream()
    writer = _writer(stream)
    writer.add("lost")
    stream.close()
    closed = io.StringIO()
    closed.close()
    monkeypatch.setattr(sys, "stderr", closed)
    writer.flush()
    writer.add("also lost", urgent=True)
