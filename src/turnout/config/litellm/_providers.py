"""Turnout providers from deployments: equal provider specs merge, each gets a unique name.

Names come from the vendor (`openai`, `anthropic`, `groq`, `kimi` …), an Azure resource's host
(`azure-myresource-eu`) or an OpenAI-compatible server's host (`local` on this machine), with
`-2`, `-3` … added when a name is taken (route names included: they share one name space).

Each provider's `model_patterns` are the models its deployments name (or the patterns of its
wildcard deployments): LiteLLM refuses every other model, and a provider with patterns of its
own serves no family defaults, so no family route sends it a model the file did not list.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from turnout.config.litellm._deployments import Deployment, ProviderSpec
    from turnout.config.litellm._notes import Notes

__all__ = ["name_providers", "provider_configs"]

_HOST = re.compile(r"^[a-z][a-z0-9+.-]*://([^/:@]+@)?([^/:]+)")


def name_providers(specs: Iterable[ProviderSpec], taken: Iterable[str]) -> dict[ProviderSpec, str]:
    """A unique name for each distinct spec, in order of first appearance."""
    routes = {name.lower() for name in taken}
    used = set(routes)
    names: dict[ProviderSpec, str] = {}
    for spec in specs:
        if spec in names:
            continue
        base = _hint(spec)
        if base.lower() in routes:
            base = f"{base}-api"  # a route took the vendor's name: `kimi` route, `kimi-api`
        name, n = base, 2
        while name.lower() in used:
            name, n = f"{base}-{n}", n + 1
        used.add(name.lower())
        names[spec] = name
    return names


def _hint(spec: ProviderSpec) -> str:
    if spec.preset is not None:
        return spec.preset
    if spec.kind in {"openai", "anthropic", "gemini", "bedrock"}:
        return spec.kind
    if spec.kind == "vertex":
        return "vertex-claude" if ("publisher", "anthropic") in spec.cloud else "vertex-gemini"
    label = _host_label(spec.base_url)
    if spec.kind == "azure-openai":
        return f"azure-{label}" if label else "azure"
    if label in {"localhost", "127-0-0-1"}:
        return "local"
    return label or "openai-compatible"


def _host_label(url: str | None) -> str | None:
    """`https://my-resource.openai.azure.com/` -> `my-resource`; None for `${VAR}` URLs."""
    if url is None:
        return None
    match = _HOST.match(url.strip().lower())
    if match is None:
        return None
    host = match.group(2)
    label = host if re.fullmatch(r"[\d.]+", host) else host.split(".")[0]
    label = re.sub(r"[^a-z0-9]+", "-", label).strip("-")
    return label[:60] or None


def provider_configs(
    deployments: Sequence[Deployment], names: dict[ProviderSpec, str], notes: Notes
) -> list[dict[str, Any]]:
    """The `providers:` list, with the models the deployments serve and the prices they
    declared (USD per 1M tokens)."""
    prices: dict[ProviderSpec, dict[str, dict[str, float]]] = {spec: {} for spec in names}
    served: dict[ProviderSpec, dict[str, str]] = {spec: {} for spec in names}
    for deployment in deployments:
        models = deployment.patterns if deployment.model is None else (deployment.model,)
        for model in models:
            served[deployment.provider].setdefault(model.lower(), model)
        if deployment.price is None:
            continue
        if deployment.model is None:
            notes.drop(
                f"{deployment.path}.model_info",
                "turnout prices a provider's models by name, and this deployment serves any",
            )
            continue
        table = prices[deployment.provider]
        price = {"input": deployment.price[0], "output": deployment.price[1]}
        if table.setdefault(deployment.model, price) != price:
            notes.drop(
                f"{deployment.path}.model_info",
                "another deployment gave the same provider and model a different price; "
                "the first is kept",
            )
    return [
        _config(spec, name, list(served[spec].values()), prices[spec])
        for spec, name in names.items()
    ]


def _config(
    spec: ProviderSpec, name: str, models: list[str], prices: dict[str, dict[str, float]]
) -> dict[str, Any]:
    config: dict[str, Any] = {"name": name, "kind": spec.kind}
    optional = {
        "preset": spec.preset,
        "wire": spec.wire,
        "base_url": spec.base_url,
        "api_version": spec.api_version,
        "api_key": spec.api_key,
        "region": spec.region,
        "api": spec.api,
        **dict(spec.aws),
    }
    config.update({key: value for key, value in optional.items() if value is not None})
    config.update(dict(spec.cloud))
    config["model_patterns"] = models
    if spec.headers:
        config["headers"] = dict(spec.headers)
    if prices:
        config["prices"] = prices
    return config
