"""Every provider kind by name (`KINDS`): a provider is built by looking its kind up and asking
the class to build itself (`KINDS[kind].from_config(config, build)`).

The `vertex` class is imported when first looked up: only a vertex provider needs its modules.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Final, Protocol

from turnout.providers.anthropic import Anthropic
from turnout.providers.azure_openai import AzureOpenAI
from turnout.providers.bedrock import Bedrock
from turnout.providers.gemini import Gemini
from turnout.providers.mock import MockProvider
from turnout.providers.openai import OpenAI
from turnout.providers.openai_compatible import OpenAICompatible

if TYPE_CHECKING:
    from turnout.providers.azure_openai import AzureFields
    from turnout.providers.base import HttpProvider
    from turnout.providers.bedrock import BedrockFields
    from turnout.providers.mock import MockFields
    from turnout.providers.openai_compatible import CompatibleFields
    from turnout.providers.settings import ConfigRules, ProviderBuild
    from turnout.providers.vertex import VertexFields

    class ProviderFields(
        AzureFields, BedrockFields, CompatibleFields, MockFields, VertexFields, Protocol
    ):
        """Every kind's fields at once: what a provider's configuration offers, whatever its
        kind (each kind reads its own part)."""


__all__ = ["KINDS", "ProviderClass"]


class ProviderClass(Protocol):
    """A provider kind's class, as the registry holds it."""

    @property
    def config_rules(self) -> ConfigRules: ...

    def from_config(self, config: ProviderFields, build: ProviderBuild) -> HttpProvider: ...


_LOADED: Final[Mapping[str, ProviderClass]] = {
    "openai": OpenAI,
    "anthropic": Anthropic,
    "openai-compatible": OpenAICompatible,
    "azure-openai": AzureOpenAI,
    "gemini": Gemini,
    "bedrock": Bedrock,
    "mock": MockProvider,
}
_LAZY: Final = "vertex"


class _Kinds(Mapping[str, ProviderClass]):
    """The registry: each kind's class, `vertex`'s imported when first asked for."""

    def __getitem__(self, kind: str) -> ProviderClass:
        if kind == _LAZY:
            from turnout.providers.vertex import Vertex  # noqa: PLC0415

            return Vertex
        return _LOADED[kind]

    def __iter__(self) -> Iterator[str]:
        yield from _LOADED
        yield _LAZY

    def __len__(self) -> int:
        return len(_LOADED) + 1


KINDS: Final[Mapping[str, ProviderClass]] = _Kinds()
"""The class of every provider kind, by the kind's name (`openai`, `bedrock`, …)."""
