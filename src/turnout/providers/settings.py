"""What a provider kind is built from: the fields of its configuration it reads, and what every
kind is handed besides them (`ProviderBuild`).

Each kind's module says the fields it reads as a read-only protocol (`BedrockFields` holds
Bedrock's and no one else's), and its class builds itself from them with
`from_config(config, build)`. The configuration's provider model has every kind's fields, so it
is each kind's fields at once; a kind never sees, and cannot read, another kind's. What a kind
needs of those fields beyond their types (`ConfigRules`) its class says as plain facts, for
whoever describes the configuration (the admin API's schema).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from turnout.providers._keywords import ProviderKeywords
    from turnout.providers.transport import HttpOptions
    from turnout.routing.clock import Clock

__all__ = ["ConfigRules", "KeyedFields", "NamedFields", "ProviderBuild"]


class NamedFields(Protocol):
    """The fields every kind reads: its `name` and `base_url` (None: the kind's default)."""

    @property
    def name(self) -> str: ...

    @property
    def base_url(self) -> str | None: ...


class KeyedFields(NamedFields, Protocol):
    """A kind that sends a key of its own: `api_key` (None: no credential of its own; the
    kind's environment default is not read, only the configuration's `${VAR}` is)."""

    @property
    def api_key(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class ConfigRules:
    """What a kind's configuration needs beyond the fields' own types.

    - `options`: the fields only some kinds take that this kind takes (on a kind that does not
      take one, it is absent or empty);
    - `required`: the fields it cannot do without (given: a string not empty, a choice set);
    - `refused`: common fields it does not take (absent or null);
    - `either`: fields of which at least one is given;
    - `exclusive`: fields of which at most one is given;
    - `paired`: fields given together or not at all;
    - `refused_values`: a field's value the kind does not take.
    """

    options: tuple[str, ...] = ()
    required: tuple[str, ...] = ()
    refused: tuple[str, ...] = ()
    either: tuple[str, ...] = ()
    exclusive: tuple[str, ...] = ()
    paired: tuple[str, ...] = ()
    refused_values: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class ProviderBuild:
    """What every kind is built with besides its own fields.

    - `keywords`: the `ProviderKeywords` every kind takes (prices, model aliases, credential
      mode, stored id, catalog);
    - `options`: the HTTP options of a kind that calls over HTTP;
    - `family`: the provider's family as the configuration reads it (a kind whose family
      depends on its models, such as `vertex`, takes it as its default);
    - `clock`: the clock a kind that waits in process (`mock`) sleeps on (None: the loop's);
    - `script`: the steps a scripted kind (`mock`) answers with, in the mock upstream's grammar
      (empty for every other kind).
    """

    keywords: ProviderKeywords
    options: HttpOptions
    family: str = "none"
    clock: Clock | None = None
    script: tuple[str, ...] = ()
