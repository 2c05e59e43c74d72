"""The rows a finished request becomes, without a store: usage entry ids and the spill's shape."""

from __future__ import annotations

from tests.store.audit._support import NOW, record
from turnout.store.audit_rows import (
    FinishedRequest,
    IdMint,
    usage_dict,
    usage_entry,
    usage_tuple,
)


def test_usage_ids_are_unique_ordered_and_differ_between_mints() -> None:
    """One mint's ids are 32 hex digits, all different and growing in order; another mint's
    differ from the first one's in their random part."""
    first, second = IdMint(), IdMint()
    ids = [first() for _ in range(1000)]
    assert all(len(id_) == 32 and int(id_, 16) >= 0 for id_ in ids)
    assert ids == sorted(set(ids))
    assert second()[:18] != ids[0][:18]


def test_a_usage_entry_goes_to_the_spill_and_back_unchanged() -> None:
    """A usage entry becomes a JSON object of named fields and back into the same row."""
    done = FinishedRequest(record("r1"), NOW, "default", "app", "/v1/messages", 200, "answered", 5)
    entry = usage_entry(done, record("r1"), IdMint())
    assert entry is not None
    spilled = usage_dict(entry)
    assert (spilled["request_id"], spilled["at"], spilled["input_tokens"]) == ("r1", NOW, 100)
    assert usage_tuple(spilled) == entry
