"""The observer on plain values: what it is handed of a finished request, with no exchange and
no server behind it.

Pins how a request without a routing record is remembered: a refused call gets one id, the
same in the audit and in the dashboard's activity; a request that sent its own id keeps it; a
plain `GET` that nobody remembers makes no id at all.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from turnout.errors import InvalidApiKey
from turnout.gateway.observe.activity import Activity
from turnout.gateway.observe.metrics import Metrics
from turnout.gateway.observe.observer import Observer

if TYPE_CHECKING:
    from turnout.record import FinishedRequest


class _Sink:
    def __init__(self) -> None:
        self.done: list[FinishedRequest] = []
        self.dropped = 0

    def submit(self, done: FinishedRequest) -> None:
        self.done.append(done)


def _observer() -> tuple[Observer, _Sink]:
    sink = _Sink()
    return Observer(Metrics(), Activity(capacity=10), sink=sink), sink


def _done(
    observer: Observer,
    method: str,
    path: str,
    status: int,
    *,
    gone: bool = False,
    failure: BaseException | None = None,
    sent_id: str | None = None,
) -> None:
    """A request without a routing record, finished now."""
    observer.request_done(
        method,
        path,
        status,
        time.perf_counter(),
        None,
        gone=gone,
        failure=failure,
        caller_id=None,
        sent_id=sent_id,
        key=None,
        project="default",
        opened=None,
    )


def test_a_refused_call_is_remembered_under_one_new_id() -> None:
    observer, sink = _observer()
    _done(observer, "POST", "/v1/chat/completions", 401, failure=InvalidApiKey("no key"))
    (done,) = sink.done
    assert done.outcome == "refused"
    assert done.status == 401
    assert isinstance(done.record, dict)
    assert done.record["error"] == {"code": "invalid_api_key"}
    (seen,) = observer.activity.recent()
    assert seen.request_id == done.record["request_id"]


def test_the_id_the_response_carried_is_kept() -> None:
    observer, sink = _observer()
    _done(observer, "POST", "/v1/messages/count_tokens", 200, sent_id="caller-1")
    assert sink.done == []  # answered without a record: nothing to audit
    (seen,) = observer.activity.recent()
    assert seen.request_id == "caller-1"


def test_a_caller_that_left_counts_as_499() -> None:
    observer, sink = _observer()
    _done(observer, "POST", "/v1/chat/completions", 200, gone=True, failure=RuntimeError())
    assert sink.done[0].status == 499
    assert observer.activity.recent()[0].status == 499


def test_a_plain_get_is_not_remembered() -> None:
    observer, sink = _observer()
    _done(observer, "GET", "/healthz", 200)
    assert sink.done == []
    assert observer.activity.recent() == []
