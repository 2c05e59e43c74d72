"""Providers: prices, data handling and the provider itself."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from turnout.schema._base import Model, Preset, ProviderKind
from turnout.schema._catalog import CatalogOverride

__all__ = ["DataHandling", "Price", "ProviderConfig"]


class Price(Model):
    """What one model costs, in USD per 1M tokens."""

    input: float = Field(ge=0, description="USD per 1M input (prompt) tokens.")
    output: float = Field(ge=0, description="USD per 1M output (completion) tokens.")
    cache_read: float | None = Field(
        None,
        ge=0,
        description="USD per 1M input tokens read from the prompt cache (null: the input price).",
    )
    cache_write: float | None = Field(
        None,
        ge=0,
        description="USD per 1M input tokens written to the prompt cache (null: the input price).",
    )


class DataHandling(Model):
    """What a provider promises about the data it receives. Policies and requirements are
    checked against it; a field left unset meets no requirement."""

    zero_data_retention: bool = Field(
        False, description="The provider keeps no prompts or answers after the call."
    )
    no_prompt_training: bool = Field(
        False, description="The provider does not train models on prompts or answers."
    )
    jurisdiction: str | None = Field(
        None, description="Where the provider processes data, e.g. `EU` or `US`."
    )


class ProviderConfig(Model):
    """A provider: a vendor endpoint plus one credential (an account). Its `kind` gives the
    wire format it speaks and its family."""

    name: str = Field(
        min_length=1,
        max_length=128,
        description="The provider's name. Targets refer to it; it names the provider's "
        "implicit route. Providers and routes share one name space, ignoring case.",
    )
    kind: ProviderKind = Field(
        description="The adapter: `openai`, `anthropic`, `openai-compatible` (any server "
        "speaking OpenAI Chat Completions), `azure-openai`, `gemini` (Google's native Gemini "
        "API; the key goes in `x-goog-api-key`), `vertex` (Google Cloud Vertex AI: Gemini "
        "and Claude models with Google Cloud credentials; needs `pip install 'turnout[gcp]'`), "
        "`bedrock` (AWS Bedrock, SigV4-signed; needs "
        "`pip install 'turnout[aws]'`), or `mock` (built in, scripted, no network).",
    )
    api_key: str | None = Field(
        None,
        description='The provider\'s own credential, usually `"${OPENAI_API_KEY}"`. Without '
        "one, `credential_mode` says what calls authenticate with.",
    )
    base_url: str | None = Field(
        None,
        description="The API base URL. Default: the vendor's public API, or the preset's. "
        "Required for `azure-openai`, and for `openai-compatible` without a `preset`.",
    )
    preset: Preset | None = Field(
        None,
        description="`openai-compatible` only: a known vendor, which gives the base URL and "
        "how its errors and quota signals read: `deepseek`, `groq`, `kimi`, `zai`, `xai`, "
        "`mistral`, `together`, `fireworks`, `openrouter`, `gemini-openai` (Google's "
        "OpenAI-compatible endpoint), `cerebras`, `perplexity`, and the local servers "
        "`ollama`, `vllm` and `lmstudio` (no key needed).",
    )
    wire: Literal["openai-chat", "anthropic-messages"] | None = Field(
        None,
        description="The wire format spoken. Required for `azure-openai` (it also decides the "
        "family); for `mock` the default is `openai-chat`.",
    )
    api_version: str | None = Field(
        None,
        description="`azure-openai` only: the `api-version` query parameter (default "
        "`2024-10-21`).",
    )
    project: str | None = Field(
        None,
        description="`vertex` only, required: the Google Cloud project id the calls bill to.",
    )
    location: str | None = Field(
        None,
        description="`vertex` only: the Vertex AI region, e.g. `us-central1` (the default) or "
        "`global`. The endpoint is `https://{location}-aiplatform.googleapis.com` "
        "(`https://aiplatform.googleapis.com` for `global`) unless `base_url` says otherwise.",
    )
    credentials_file: str | None = Field(
        None,
        description="`vertex` only: the path of a service-account JSON key file. Without it "
        "or `credentials_json`, application-default credentials are used "
        "(`GOOGLE_APPLICATION_CREDENTIALS`, `gcloud auth application-default login`, or the "
        "metadata server on Google Cloud).",
    )
    credentials_json: str | None = Field(
        None,
        description='`vertex` only: the service-account JSON itself, usually `"${VAR}"`.',
    )
    publisher: Literal["google", "anthropic"] | None = Field(
        None,
        description="`vertex` only: the publisher of every model this provider serves: "
        "`google` (Gemini, family gemini) or `anthropic` (Claude over Anthropic Messages, "
        "family anthropic). Default: by the model name (`claude-*` is anthropic, anything else "
        "google), and so is each target's family: a target whose model is a Claude model "
        "serves `/v1/messages` over Anthropic Messages (`:rawPredict`) like any anthropic "
        "target; the provider's own family (its implicit route, policies) is anthropic when "
        "every one of its `model_patterns` starts with `claude`, else gemini.",
    )
    # `bedrock` providers only: the AWS region, credentials and API (see providers.bedrock).
    region: str | None = Field(
        None,
        description="`bedrock` only: the AWS region (default `us-east-1`); it names the "
        "endpoint `https://bedrock-runtime.{region}.amazonaws.com` and the signing region.",
    )
    access_key_id: str | None = Field(
        None,
        description="`bedrock` only: the AWS access key id, with `secret_access_key` (and "
        "`session_token` for temporary keys). Default: the standard AWS credential chain "
        "(environment, `profile`, container or instance role).",
    )
    secret_access_key: str | None = Field(
        None, description="`bedrock` only: the AWS secret access key, with `access_key_id`."
    )
    session_token: str | None = Field(
        None, description="`bedrock` only: the session token of temporary AWS credentials."
    )
    profile: str | None = Field(
        None,
        description="`bedrock` only: the AWS shared-config profile the credential chain reads.",
    )
    api: Literal["converse", "invoke"] | None = Field(
        None,
        description="`bedrock` only: `converse` (Bedrock's Converse API) or `invoke` "
        "(Anthropic Messages through InvokeModel, which keeps `cache_control`, thinking and "
        "betas). Default: `invoke` for Claude models (`anthropic.…`, `us.anthropic.…` …), "
        "`converse` for the rest.",
    )
    credential_mode: Literal["org_key", "passthrough"] | None = Field(
        None,
        description="`org_key`: calls use this provider's own credential. `passthrough`: "
        "calls use the caller's own provider credential, and only callers that send one are "
        "served. Default: `org_key` when there is an `api_key` or none is needed (`mock`, "
        "`vertex`, the `ollama`, `vllm` and `lmstudio` presets, a server on loopback), else "
        "`passthrough`.",
    )
    model_patterns: tuple[str, ...] = Field(
        (),
        description="Models this provider serves through its implicit route while it is in "
        "no enabled route. Empty: its family's default patterns (`gpt-*`, `claude-*` …), and "
        "it serves in its family's route too; with patterns of its own it does not.",
    )
    model_aliases: dict[str, str] = Field(
        default_factory=dict,
        description="Requested model to the model sent on the wire, for this provider.",
    )
    prices: dict[str, Price] = Field(
        default_factory=dict,
        description="Prices by exact model name. They give the routing record its `cost` and "
        "rank targets under `lowest-cost`; a model without one here is priced from the model "
        "catalog when the catalog knows it.",
    )
    catalog: dict[str, CatalogOverride] = Field(
        default_factory=dict,
        description="This provider's word on a model's context window, largest answer and "
        "capabilities, by exact model name, over the model catalog's.",
    )
    data_handling: DataHandling = Field(
        DataHandling(),
        description="What the provider promises about data; checked against policies and "
        "requirements.",
    )
    connect_timeout: float = Field(
        10.0,
        gt=0,
        le=600,
        description="Seconds to open a connection to the provider. A call that cannot connect "
        "in time fails as `timeout`.",
    )
    max_connections: int = Field(
        100,
        ge=1,
        le=100_000,
        description="The most connections open at once to this provider, per worker process; "
        "a call past it waits for one to be free, within `connect_timeout`. Each open stream "
        "holds a connection, so raise it to carry more streams at once.",
    )
    headers: dict[str, str] = Field(
        default_factory=dict, description="Extra HTTP headers sent with every call."
    )
    # `mock` providers only: what the built-in scripted provider answers (see providers.mock).
    script: tuple[dict[str, Any], ...] = Field(
        (),
        description="`mock` only: one step per call, in order, e.g. `{status: 503, "
        "retry_after: 8}` or `{ok: true}`; the steps use the mock upstream's fault names.",
    )
    max_response_bytes: int = Field(
        32 * 1024 * 1024,
        ge=1024,
        description="The largest answer taken from the provider, in bytes after "
        "decompression (default 32 MiB), and the largest single event of a stream. A larger "
        "one fails the call as `provider_error` and the route moves on; streams are relayed as "
        "they arrive, never held whole.",
    )
