"""LiteLLM's `model_list`: each deployment -> a provider spec plus its target's settings.

A deployment's provider comes from the prefix of `litellm_params.model` (`azure/gpt-4o-eu`),
or `custom_llm_provider`, or, for a bare model name, the vendor LiteLLM would infer (`gpt-*`,
`o1…`, `claude-*`). `gemini/…` becomes the `gemini` kind; `mistral/`, `together_ai/`,
`fireworks_ai/`, `openrouter/`, `cerebras/`, `perplexity/` and `lm_studio/` become
`openai-compatible` providers with that vendor's preset; `vertex_ai/…` becomes the `vertex`
kind (`turnout.config.litellm._vertex`). `bedrock/…` becomes the `bedrock` kind
(`bedrock/converse/…` and `bedrock/invoke/…` set its `api`; `aws_region_name`, the AWS keys
and `aws_profile_name` become its region and credentials, keys as `${VAR}` references; without
keys it reads the standard AWS chain, as LiteLLM does). Unsupported providers and
malformed entries are skipped with a note. A
missing `api_key` becomes the environment variable LiteLLM itself would read
(`${OPENAI_API_KEY}` …), so the imported provider keeps using an organisation key.

Wildcard deployments serve model patterns where turnout can ask the provider for what LiteLLM
would: a pattern `model_name` with a fixed model (`gpt-*` -> `openai/gpt-4o`), the same
pattern on both sides (`gpt-*` -> `openai/gpt-*`, `*` -> `openai/*`: the requested name is
passed on), and `openai/*` or `anthropic/*` for the bare names LiteLLM takes as that vendor's.
One that rewrites the requested name in another way is skipped with a note.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from turnout.config.litellm._values import (
    is_loopback,
    number,
    reference_of,
    text_of,
)
from turnout.config.litellm._vertex import VERTEX_PARAMS, vertex_fields

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.config.litellm._notes import Notes
    from turnout.config.litellm._values import Secrets

__all__ = ["Deployment", "ProviderSpec", "read_deployments"]

# LiteLLM provider prefix -> (turnout kind, openai-compatible preset)
_KINDS: Mapping[str, tuple[str, str | None]] = {
    "openai": ("openai", None),
    "anthropic": ("anthropic", None),
    "azure": ("azure-openai", None),
    "gemini": ("gemini", None),
    "vertex_ai": ("vertex", None),
    "deepseek": ("openai-compatible", "deepseek"),
    "groq": ("openai-compatible", "groq"),
    "xai": ("openai-compatible", "xai"),
    "moonshot": ("openai-compatible", "kimi"),
    "zai": ("openai-compatible", "zai"),
    "ollama": ("openai-compatible", "ollama"),
    "ollama_chat": ("openai-compatible", "ollama"),
    "hosted_vllm": ("openai-compatible", "vllm"),
    "mistral": ("openai-compatible", "mistral"),
    "together_ai": ("openai-compatible", "together"),
    "fireworks_ai": ("openai-compatible", "fireworks"),
    "openrouter": ("openai-compatible", "openrouter"),
    "cerebras": ("openai-compatible", "cerebras"),
    "perplexity": ("openai-compatible", "perplexity"),
    "lm_studio": ("openai-compatible", "lmstudio"),
    "bedrock": ("bedrock", None),
    "litellm_proxy": ("openai-compatible", None),
}
# The variables LiteLLM reads when a deployment names no key or base URL.
_KEY_VARIABLES = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "azure": "AZURE_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "groq": "GROQ_API_KEY",
    "xai": "XAI_API_KEY",
    "moonshot": "MOONSHOT_API_KEY",
    "zai": "ZAI_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "together_ai": "TOGETHERAI_API_KEY",
    "fireworks_ai": "FIREWORKS_AI_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "cerebras": "CEREBRAS_API_KEY",
    "perplexity": "PERPLEXITYAI_API_KEY",
    "litellm_proxy": "LITELLM_PROXY_API_KEY",
}
_BASE_VARIABLES = {"azure": "AZURE_API_BASE", "litellm_proxy": "LITELLM_PROXY_API_BASE"}
_OPENAI_BASE = "https://api.openai.com/v1"
_BARE_OPENAI = re.compile(r"(gpt-|chatgpt-|text-embedding-|o\d(\Z|-))")

_PATTERN = re.compile(r"\*|\*?[^*\s]+\*?")
# The bare names LiteLLM takes as this vendor's, which its `openai/*` (`anthropic/*`) serves.
_BARE_PATTERNS = {
    "openai": ("gpt-*", "chatgpt-*", "text-embedding-*", "o1", "o1-*", "o3", "o3-*", "o4-*"),
    "anthropic": ("claude-*",),
}

_PARAMS_READ = frozenset(
    {
        "model", "api_key", "api_base", "custom_llm_provider", "timeout", "stream_timeout",
        "max_retries", "num_retries", "weight", "rpm", "tpm", "order",
        "input_cost_per_token", "output_cost_per_token",
        "aws_region_name", "aws_access_key_id", "aws_secret_access_key", "aws_session_token",
        "aws_profile_name",
    }
)  # fmt: skip
# LiteLLM's AWS settings -> the bedrock provider's fields (secrets as `${VAR}` references).
_AWS_FIELDS = {
    "aws_access_key_id": "access_key_id",
    "aws_secret_access_key": "secret_access_key",
    "aws_session_token": "session_token",
}
_BEDROCK_APIS = ("converse", "invoke")
_INFO_READ = frozenset(
    {"id", "mode", "input_cost_per_token", "output_cost_per_token", "max_input_tokens"}
)
_ENTRY_READ = frozenset({"model_name", "litellm_params", "model_info", "rpm", "tpm"})
_PARAM_REASONS = {
    "extra_headers": "headers may hold credentials: add them to the provider's headers by hand",
    "headers": "headers may hold credentials: add them to the provider's headers by hand",
    "litellm_credential_name": "credentials come from the provider's api_key",
    "tags": "tag-based routing has no turnout equivalent",
    "azure_ad_token": "Azure AD sign-in is not supported: use an API key",
    "tenant_id": "Azure AD sign-in is not supported: use an API key",
    "client_id": "Azure AD sign-in is not supported: use an API key",
    "client_secret": "Azure AD sign-in is not supported: use an API key",
}
_REQUEST_DEFAULTS = frozenset({"temperature", "top_p", "max_tokens", "seed", "stop"})
_INFO_REASONS = {
    "base_model": "turnout prices come from the provider's prices",
    "max_tokens": "turnout reads a target's context window from max_input_tokens",
}


@dataclass(frozen=True, slots=True)
class ProviderSpec:
    """What makes deployments share one turnout provider: equal specs merge into one."""

    kind: str
    preset: str | None = None
    wire: str | None = None
    base_url: str | None = None
    api_version: str | None = None
    api_key: str | None = None  # always a ${VAR} reference, never a literal
    headers: tuple[tuple[str, str], ...] = ()
    cloud: tuple[tuple[str, str], ...] = ()
    """A cloud kind's own fields (`vertex`: project, location, credentials, publisher)."""
    # bedrock only: region, api, profile and the AWS keys (always ${VAR} references).
    region: str | None = None
    api: str | None = None
    aws: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Deployment:
    """One usable deployment: its model group, provider, wire model and per-target settings.

    `model` None passes the requested model on (a wildcard deployment); `patterns` are the
    model patterns a wildcard group serves (empty: the group serves its own name). Times are
    seconds; `price` is USD per 1M input and output tokens.
    """

    index: int
    group: str
    provider: ProviderSpec
    model: str | None
    name: str | None = None
    timeout: float | None = None
    stream_timeout: float | None = None
    max_retries: int | None = None
    weight: float | None = None
    rpm: float | None = None
    tpm: float | None = None
    order: float | None = None
    price: tuple[float, float] | None = None
    context_window: int | None = None
    patterns: tuple[str, ...] = ()

    @property
    def path(self) -> str:
        """Where the deployment sits in the LiteLLM file."""
        return f"model_list[{self.index}]"


def read_deployments(model_list: object, secrets: Secrets, notes: Notes) -> list[Deployment]:
    """Every usable deployment of `model_list`, in file order; the rest become notes."""
    if model_list is None:
        return []
    if not isinstance(model_list, list):
        notes.drop("model_list", "not a list; no deployment imported")
        return []
    found = [_read(i, entry, secrets, notes) for i, entry in enumerate(model_list)]
    return [d for d in found if d is not None]


def _read(index: int, entry: object, secrets: Secrets, notes: Notes) -> Deployment | None:
    path = f"model_list[{index}]"
    problem = _problem(entry)
    if problem is not None:
        notes.drop(path, f"{problem}; deployment skipped")
        return None
    assert isinstance(entry, dict)
    params: dict[str, Any] = entry["litellm_params"]
    prefix, model = _split_model(params)
    group = entry["model_name"].strip()
    if not prefix and "*" in model:
        notes.drop(path, "LiteLLM picks each request's provider from its name; deployment skipped")
        return None
    if prefix not in _KINDS:
        what = f"provider '{prefix}'" if prefix else "a provider LiteLLM infers"
        notes.drop(path, f"{params['model']} uses {what}, not supported; deployment skipped")
        return None
    info: object = entry.get("model_info") or {}
    if not isinstance(info, dict):
        notes.drop(f"{path}.model_info", "not a mapping")
        info = {}
    patterns: tuple[str, ...] = ()
    wire: str | None = model
    if "*" in group or "*" in model:
        served = _wildcard(group, prefix, model, path, notes)
        if served is None:
            return None
        patterns, wire = served
    _note_unread(path, entry, info, prefix, notes)
    return Deployment(
        index=index,
        group=group,
        provider=_provider(prefix, params, path, secrets, notes),
        model=wire,
        patterns=patterns,
        name=text_of(info.get("id")),
        timeout=_seconds(params, "timeout", path, notes),
        stream_timeout=_seconds(params, "stream_timeout", path, notes),
        max_retries=_retries(params),
        weight=_positive(params.get("weight")),
        rpm=_positive(params.get("rpm", entry.get("rpm"))),
        tpm=_positive(params.get("tpm", entry.get("tpm"))),
        order=number(params.get("order")),
        price=_price(params, info, path, notes),
        context_window=_context_window(info),
    )


def _problem(entry: object) -> str | None:
    """Why `entry` cannot become a target, or None."""
    if not isinstance(entry, dict):
        return "not a mapping"
    group = entry.get("model_name")
    params = entry.get("litellm_params")
    if not isinstance(group, str) or not group.strip():
        return "no model_name"
    if not isinstance(params, dict) or not isinstance(params.get("model"), str):
        return "no litellm_params.model"
    if any(c.isspace() for c in group.strip()):
        return "a model_name with spaces cannot be a model pattern"
    return None


def _wildcard(
    group: str, prefix: str, model: str, path: str, notes: Notes
) -> tuple[tuple[str, ...], str | None] | None:
    """The patterns a wildcard deployment serves and its wire model (None: the requested
    model), or None when turnout cannot ask the provider for what LiteLLM would (noted)."""
    if group == f"{prefix}/*" and model == "*" and prefix in _BARE_PATTERNS:
        bare = _BARE_PATTERNS[prefix]
        notes.change(
            path,
            f"serves the bare names LiteLLM takes as {prefix}'s: {', '.join(bare)}; "
            f"'{prefix}/…' names are not served, as turnout passes a requested name on "
            "unchanged",
        )
        return bare, None
    if not _PATTERN.fullmatch(group):
        rule = "a turnout model pattern has one '*' at the start, the end or both"
        notes.drop(path, f"'{group}' is not a model pattern ({rule}); deployment skipped")
        return None
    if "*" not in model:
        return (group,), model
    if model == group:
        return (group,), None
    notes.drop(
        path,
        f"wildcard routing that turns '{group}' into '{prefix}/{model}' has no turnout "
        "equivalent; deployment skipped",
    )
    return None


def _split_model(params: Mapping[str, Any]) -> tuple[str, str]:
    """(LiteLLM provider prefix, wire model) of a deployment; prefix '' when unknown."""
    raw = str(params["model"]).strip()
    custom = params.get("custom_llm_provider")
    if isinstance(custom, str) and custom.strip():
        prefix = custom.strip()
        return prefix, raw.removeprefix(prefix + "/")
    head, slash, tail = raw.partition("/")
    if slash and head == "bedrock":
        api, slash_api, model = tail.partition("/")
        return head, model if slash_api and api in _BEDROCK_APIS else tail
    if slash:
        return head, tail
    if _BARE_OPENAI.match(raw):
        return "openai", raw
    return ("anthropic", raw) if raw.startswith("claude-") else ("", raw)


def _provider(
    prefix: str, params: Mapping[str, Any], path: str, secrets: Secrets, notes: Notes
) -> ProviderSpec:
    kind, preset = _KINDS[prefix]
    if kind == "bedrock":
        return _bedrock(params, path, secrets, notes)
    base = text_of(params.get("api_base"))
    key = reference_of(params.get("api_key"), f"{path}.litellm_params.api_key", secrets, notes)
    if prefix == "openai" and base is not None and base.rstrip("/") == _OPENAI_BASE:
        base = None
    if prefix == "openai" and base is not None and not base.startswith("${"):
        kind = "openai-compatible"  # LiteLLM's way of naming any OpenAI-compatible server
    if preset == "ollama" and base is not None:
        base = _with_v1(base)  # LiteLLM speaks Ollama's own API; turnout its OpenAI one
    if base is None and prefix in _BASE_VARIABLES:
        base = "${" + _BASE_VARIABLES[prefix] + "}"
    if key is None and prefix in _KEY_VARIABLES and not (base and is_loopback(base)):
        key = "${" + _KEY_VARIABLES[prefix] + "}"
    headers: tuple[tuple[str, str], ...] = ()
    organization = text_of(params.get("organization"))
    if organization is not None and kind != "anthropic":
        headers = (("OpenAI-Organization", organization),)
    elif "organization" in params:
        notes.drop(f"{path}.litellm_params.organization", "only OpenAI-style providers take it")
    cloud: tuple[tuple[str, str], ...] = ()
    if kind == "vertex":
        model = str(params["model"]).removeprefix(prefix + "/")
        cloud = vertex_fields(model, params, path, secrets, notes)
    return ProviderSpec(
        kind=kind,
        preset=preset,
        wire="openai-chat" if kind == "azure-openai" else None,
        base_url=base,
        api_version=text_of(params.get("api_version")) if kind == "azure-openai" else None,
        api_key=key,
        headers=headers,
        cloud=cloud,
    )


def _bedrock(params: Mapping[str, Any], path: str, secrets: Secrets, notes: Notes) -> ProviderSpec:
    """A bedrock provider: its region, API (from `bedrock/converse/…`), profile and keys."""
    head, _, _ = str(params["model"]).strip().removeprefix("bedrock/").partition("/")
    aws: list[tuple[str, str]] = []
    for source, field in _AWS_FIELDS.items():
        where = f"{path}.litellm_params.{source}"
        reference = reference_of(params.get(source), where, secrets, notes)
        if reference is not None:
            aws.append((field, reference))
    profile = text_of(params.get("aws_profile_name"))
    if profile is not None:
        aws.append(("profile", profile))
    return ProviderSpec(
        kind="bedrock",
        base_url=text_of(params.get("api_base")),
        region=text_of(params.get("aws_region_name")),
        api=head if head in _BEDROCK_APIS else None,
        aws=tuple(aws),
    )


def _with_v1(base: str) -> str:
    trimmed = base.rstrip("/")
    return trimmed if trimmed.endswith("/v1") else trimmed + "/v1"


def _note_unread(
    path: str, entry: Mapping[str, Any], info: Mapping[str, Any], prefix: str, notes: Notes
) -> None:
    params: Mapping[str, Any] = entry["litellm_params"]
    for key in entry:
        if key not in _ENTRY_READ:
            notes.drop(f"{path}.{key}", "no turnout equivalent")
    for key in params:
        if key in _PARAMS_READ or key == "organization":
            continue
        if key == "api_version" and prefix == "azure":
            continue
        if key in VERTEX_PARAMS and prefix == "vertex_ai":
            continue
        reason = _PARAM_REASONS.get(key, "no turnout equivalent")
        if key in _REQUEST_DEFAULTS:
            reason = "a request default: turnout sends the caller's own parameters"
        notes.drop(f"{path}.litellm_params.{key}", reason)
    for key in info:
        if key not in _INFO_READ:
            reason = _INFO_REASONS.get(key, "deployment metadata turnout does not use")
            if str(key).startswith("supports_"):
                reason = "target capabilities were left undeclared, so every request is eligible"
            notes.drop(f"{path}.model_info.{key}", reason)


def _seconds(params: Mapping[str, Any], key: str, path: str, notes: Notes) -> float | None:
    if params.get(key) is None:
        return None
    seconds = number(params[key])
    if seconds is None or seconds <= 0:
        notes.drop(f"{path}.litellm_params.{key}", "not a number of seconds above 0")
        return None
    return seconds


def _retries(params: Mapping[str, Any]) -> int | None:
    for key in ("max_retries", "num_retries"):
        value = number(params.get(key))
        if value is not None and value >= 0:
            return int(value)
    return None


def _positive(value: object) -> float | None:
    result = number(value)
    return result if result is not None and result >= 0 else None


def _price(
    params: Mapping[str, Any], info: Mapping[str, Any], path: str, notes: Notes
) -> tuple[float, float] | None:
    """USD per 1M tokens from LiteLLM's USD per token (litellm_params first, then model_info)."""
    costs = [
        number(params.get(key, info.get(key)))
        for key in ("input_cost_per_token", "output_cost_per_token")
    ]
    given = [cost for cost in costs if cost is not None]
    if not given:
        return None
    if len(given) < 2 or min(given) < 0:
        section = "litellm_params" if "input_cost_per_token" in params else "model_info"
        notes.drop(f"{path}.{section}", "a price needs both input and output cost per token")
        return None
    return (round(given[0] * 1e6, 6), round(given[1] * 1e6, 6))


def _context_window(info: Mapping[str, Any]) -> int | None:
    tokens = number(info.get("max_input_tokens"))
    return int(tokens) if tokens is not None and tokens >= 1 else None
