"""Provider adapters: one module per provider kind.

=====================  =======================  ==================================================
kind                   class                    wire format and family
=====================  =======================  ==================================================
``openai``             `OpenAI`                 OpenAI Chat Completions + Embeddings; openai
``anthropic``          `Anthropic`              Anthropic Messages; anthropic
``openai-compatible``  `OpenAICompatible`       OpenAI Chat Completions; none (presets: deepseek,
                                                groq, kimi, zai, xai, ollama, vllm, mistral,
                                                together, fireworks, openrouter,
                                                gemini-openai, cerebras, perplexity,
                                                lmstudio)
``azure-openai``       `AzureOpenAI`            the required ``wire``; its family
``gemini``             `Gemini`                 Gemini generateContent + batchEmbedContents;
                                                gemini
``vertex``             `Vertex`                 Gemini generateContent or Anthropic Messages
                                                (rawPredict), by the model's publisher; gemini or
                                                anthropic
``bedrock``            `Bedrock`                Bedrock Converse, or Anthropic Messages through
                                                InvokeModel for Claude models; none
``mock``               `MockProvider`           in-process, scripted, no network; none
=====================  =======================  ==================================================

Each one is a `turnout.routing.client.ChatClient`: `provider` (its name), `complete`, `stream`,
`embed` where supported, `price_for(model)`, plus `family`, `wire_format` and `aclose()`. Each
owns one pooled keep-alive HTTP client (`Http1Transport`, `turnout.providers.http1`), never retries
on its own, and maps transport errors and statuses to the error classes of `turnout.errors` in one
place (`turnout.providers.transport`). `HttpOptions` holds the HTTP settings (headers, timeouts,
connection cap) a provider is built with.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from turnout.providers.anthropic import Anthropic
from turnout.providers.azure_openai import AzureOpenAI
from turnout.providers.base import HttpProvider, facts_of
from turnout.providers.bedrock import Bedrock
from turnout.providers.facts import ClientFacts
from turnout.providers.gemini import Gemini
from turnout.providers.http1 import Http1Transport
from turnout.providers.mock import MockProvider
from turnout.providers.openai import OpenAI
from turnout.providers.openai_compatible import PRESETS, OpenAICompatible
from turnout.providers.transport import HttpOptions, HttpTimeouts

if TYPE_CHECKING:
    from turnout.providers.vertex import Vertex

__all__ = [
    "PRESETS",
    "Anthropic",
    "AzureOpenAI",
    "Bedrock",
    "ClientFacts",
    "Gemini",
    "Http1Transport",
    "HttpOptions",
    "HttpProvider",
    "HttpTimeouts",
    "MockProvider",
    "OpenAI",
    "OpenAICompatible",
    "Vertex",
    "facts_of",
]


def __getattr__(name: str) -> Any:
    """`Vertex` is loaded when first asked for: only a vertex provider needs its modules."""
    if name == "Vertex":
        from turnout.providers.vertex import Vertex  # noqa: PLC0415

        return Vertex
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
