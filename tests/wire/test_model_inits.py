"""The value objects made on every request set their slots in their own `__init__`: each takes
the dataclass's fields in order, with the dataclass's defaults, sets every one of them, and
stays frozen."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

from turnout.record import Usage
from turnout.wire.model import RawBody, TextPart

OWN_INITS = [TextPart, RawBody, Usage]


@pytest.mark.parametrize("cls", OWN_INITS)
def test_init_takes_the_fields_in_order_with_their_defaults(cls: type[Any]) -> None:
    """The parameters are the fields, in order, each with the field's default (a field added
    to the class without its parameter fails here)."""
    parameters = list(inspect.signature(cls).parameters.values())
    fields = dataclasses.fields(cls)
    assert [p.name for p in parameters] == [f.name for f in fields]
    assert [p.default for p in parameters] == [
        inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default for f in fields
    ]


@pytest.mark.parametrize("cls", OWN_INITS)
def test_init_sets_every_field_and_the_object_stays_frozen(cls: type[Any]) -> None:
    """Each field holds what was passed for it; assigning one still raises."""
    values = [object() for _ in dataclasses.fields(cls)]
    made = cls(*values)
    assert [getattr(made, f.name) for f in dataclasses.fields(cls)] == values
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.__setattr__(dataclasses.fields(cls)[0].name, None)
