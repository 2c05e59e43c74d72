"""The mock upstream's fault grammar and fault bookkeeping (pure, no sockets)."""

from __future__ import annotations

import re

import pytest

from turnout.mock_upstream import faults
from turnout.mock_upstream.faults import (
    ANY_MODEL,
    GRAMMAR,
    NO_FAULT,
    Fault,
    FaultBook,
    describe,
    parse_fault,
    parse_sequence,
    split_model,
)


def test_items_parse_into_fields() -> None:
    """Every kind of item (int, float, flag, text, choice) lands in its field."""
    fault = parse_fault(
        "status=429; retry_after=1.5; retry_after_ms=250; vendor=kimi; message=slow down; "
        "type=custom; cut=2; malformed; no_done; latency=0.25; body=html"
    )
    assert fault.status == 429
    assert fault.retry_after == 1.5
    assert fault.retry_after_ms == 250
    assert fault.vendor == "kimi"
    assert fault.message == "slow down"
    assert fault.error_type == "custom"
    assert fault.cut == 2
    assert fault.malformed == 1
    assert fault.no_done is True
    assert fault.latency == 0.25
    assert fault.body == "html"


def test_aliases_and_ok() -> None:
    """`retry`, `slow` and `ctx` are aliases; `ok` is the empty step."""
    fault = parse_fault("retry=8;slow=2;ctx")
    assert (fault.retry_after, fault.latency, fault.context_length) == (8.0, 2.0, True)
    assert parse_fault("ok").is_noop


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("bogus", "unknown fault item 'bogus'"),
        ("status=abc", "expected a number"),
        ("status=42", "not an HTTP status"),
        ("latency=-1", "must not be negative"),
        ("hang=yes", "takes no value"),
        ("status", "needs a value"),
        ("vendor=acme", "vendor='acme'"),
        ("body=weird", "body='weird'"),
    ],
)
def test_bad_items_are_named(spec: str, words: str) -> None:
    """A spec that does not parse raises ValueError naming the bad item."""
    with pytest.raises(ValueError, match=words):
        parse_sequence(spec)


def test_sequence_has_one_fault_per_step() -> None:
    """`a | b` is two steps; parse_fault refuses a sequence."""
    steps = parse_sequence("status=429 | ok | status=503")
    assert [s.status for s in steps] == [429, None, 503]
    with pytest.raises(ValueError, match="sequence"):
        parse_fault("status=429|ok")


@pytest.mark.parametrize(
    ("model", "base", "spec"),
    [
        ("gpt-4o-mini", "gpt-4o-mini", None),
        ("gpt-4o-mini/fault:status=429;retry_after=8", "gpt-4o-mini", "status=429;retry_after=8"),
        ("claude-x@fault:hang", "claude-x", "hang"),
        ("fault:reset", "mock", "reset"),
        ("mock-429-retry-8", "mock", "status=429;retry_after=8"),
        ("mock-quota-kimi", "mock", "quota;vendor=kimi"),
        ("mock-cut-2", "mock", "cut=2"),
        ("mock-hang", "mock", "hang"),
        ("mock-large", "mock-large", None),
        ("mock-retry", "mock-retry", None),
    ],
)
def test_split_model(model: str, base: str, spec: str | None) -> None:
    """Model names carry a spec after `fault:` or as `mock-` shorthand words; others none."""
    assert split_model(model) == (base, spec)


def test_sequence_advances_per_request_then_answers() -> None:
    """The n-th request with a sequence spec gets step n; after the last step, no fault."""
    book = FaultBook()
    spec = "status=429|status=503"
    picked = [book.pick("m", spec) for _ in range(4)]
    assert [f.status for f in picked] == [429, 503, None, None]
    assert picked[2] is NO_FAULT


def test_single_step_spec_repeats() -> None:
    """A one-step spec applies to every request that carries it."""
    book = FaultBook()
    assert [book.pick("m", "status=500").status for _ in range(3)] == [500, 500, 500]


def test_scripts_come_first_then_the_request_spec() -> None:
    """A model's script is consumed before the request's own spec; `*` serves any model."""
    book = FaultBook()
    book.script("m", ["status=429", "ok"])
    book.script(ANY_MODEL, ["status=401"])
    assert book.pick("m", "status=500").status == 429
    assert book.pick("m", "status=500").is_noop
    assert book.pick("other", None).status == 401
    assert book.pick("m", "status=500").status == 500
    assert book.pick("other", None) is NO_FAULT
    assert book.pending() == {}


def test_script_rejects_bad_steps_and_clear_forgets() -> None:
    """A bad scripted step raises; clear() forgets scripts and sequence positions."""
    book = FaultBook()
    with pytest.raises(ValueError, match="unknown fault item"):
        book.script("m", ["nope"])
    book.script("m", ["status=429"])
    book.pick("x", "status=429|ok")
    book.clear()
    assert book.pending() == {}
    assert book.pick("x", "status=429|ok").status == 429


def test_is_error_and_describe() -> None:
    """Error statuses and 4xx signals are errors; a bad body is not; describe lists set items."""
    assert parse_fault("status=503").is_error
    assert parse_fault("quota").is_error
    assert not parse_fault("status=502;body=html").is_error
    assert not parse_fault("refuse").is_error
    assert describe(parse_fault("status=429;retry_after=8")) == {"status": 429, "retry_after": 8.0}
    assert describe(Fault()) == {}


def test_grammar_text_names_every_item_alias_and_shorthand_word() -> None:
    """The reference text documents each item, alias and shorthand word the parser accepts."""
    words = (
        faults._KNOWN
        | faults._ALIASES.keys()
        | faults._SHORTHAND_WORDS.keys()
        | faults._SHORTHAND_VALUED.keys()
    )
    missing = sorted(w for w in words if not re.search(rf"(?<![\w-]){w}(?![\w])", GRAMMAR))
    assert missing == []
