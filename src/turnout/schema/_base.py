"""What every configured object shares: the frozen base model with camelCase aliases, and
the small types several objects use."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from turnout.vendors.presets import Preset

__all__ = ["ErrorClassName", "Model", "Preset", "ProviderKind", "Seconds"]

ErrorClassName = Literal["provider_error", "timeout", "rate_limited", "quota_exhausted", "auth"]
ProviderKind = Literal[
    "openai",
    "anthropic",
    "openai-compatible",
    "azure-openai",
    "gemini",
    "vertex",
    "bedrock",
    "mock",
]
Seconds = Annotated[float, Field(gt=0)]


class Model(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        str_strip_whitespace=True,
    )
