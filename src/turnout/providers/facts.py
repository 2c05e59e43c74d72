"""What the gateway asks of a client beyond the `ChatClient` protocol, read once (`ClientFacts`):
the wire format it speaks, its base URL and credential mode, which optional endpoints it serves
(embeddings, OpenAI Responses, token counting) and how it names models on the wire.

A provider adapter reads its own once and keeps them (`HttpProvider.facts`); any other client
(a test double, a route used as a target) is read when asked, by `ClientFacts.of`, the one place
these optional features are probed for.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, Literal, cast, get_args

from turnout.wire.model import WireFormat

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = ["ClientFacts"]

_WIRE_FORMATS: Final[frozenset[str]] = frozenset(get_args(WireFormat))
_NO_ALIASES: Final[Mapping[str, str]] = MappingProxyType({})
_COUNTING_FORMAT: Final = "anthropic-messages"


@dataclass(frozen=True, slots=True)
class ClientFacts:
    """A client's optional features, as the gateway reads them.

    - `wire_format`: the wire format it speaks (None: it does not say);
    - `base_url`: where it sends its calls, as text (None: it does not say);
    - `credential_mode`: `org_key` (its own credential; the default) or `passthrough`;
    - `supports_embeddings`: it says so and has `embed`;
    - `supports_responses`: it serves OpenAI's Responses API itself;
    - `counts_tokens`: it speaks Anthropic Messages and has `count_tokens`;
    - `model_aliases`: requested model -> wire model (empty when it has none);
    - `wire_model`: what it sends upstream for a requested model (None: the model as asked).
    """

    wire_format: WireFormat | None = None
    base_url: str | None = None
    credential_mode: Literal["org_key", "passthrough"] = "org_key"
    supports_embeddings: bool = False
    supports_responses: bool = False
    counts_tokens: bool = False
    model_aliases: Mapping[str, str] = field(default_factory=lambda: _NO_ALIASES)
    wire_model: Callable[[str | None], str] | None = None

    @classmethod
    def of(cls, client: object) -> ClientFacts:
        """The facts of `client`, read from the attributes it offers (each left out when it
        does not offer it, or offers something of another type)."""
        wire = getattr(client, "wire_format", None)
        wire_format = cast("WireFormat", wire) if wire in _WIRE_FORMATS else None
        base_url = getattr(client, "base_url", None)
        mode = getattr(client, "credential_mode", "org_key")
        aliases = getattr(client, "model_aliases", None)
        wire_model = getattr(client, "wire_model", None)
        return cls(
            wire_format,
            base_url if isinstance(base_url, str) else None,
            "passthrough" if mode == "passthrough" else "org_key",
            bool(getattr(client, "supports_embeddings", False)) and hasattr(client, "embed"),
            bool(getattr(client, "supports_responses", False)),
            wire_format == _COUNTING_FORMAT and hasattr(client, "count_tokens"),
            aliases or _NO_ALIASES,
            wire_model if callable(wire_model) else None,
        )

    def wire_model_for(self, model: str) -> str:
        """The model sent upstream for `model` (the model itself without `wire_model`)."""
        return model if self.wire_model is None else self.wire_model(model)
