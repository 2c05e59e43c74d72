"""The configuration the gateway starts on without a configuration file.

Providers come from the environment: `openai` when `OPENAI_API_KEY` is set, `anthropic` when
`ANTHROPIC_API_KEY` is (each serving its family's models through its implicit route, so no
route needs writing; `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL` move them). With neither, one
built-in `mock` provider answers any model, so the quick start works offline; it also names
the mock upstream's own model list as exact models, so that `GET /v1/models` offers what an
SDK or a tool that picks from the list can call (`gpt-4o-mini`, `claude-sonnet-4-5` …) rather
than nothing, since `*` alone lists no name. Callers need no key (`auth: open`, bound to
127.0.0.1); shared state is in memory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from turnout.mock_upstream.answers import MODELS
from turnout.schema import FileConfig

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["MOCK_PROVIDER", "embedded_config"]

MOCK_PROVIDER: Final = "mock"
"""The name of the built-in provider serving any model when no vendor key is set."""

_VENDORS: Final = (
    ("openai", "OPENAI_API_KEY", "OPENAI_BASE_URL"),
    ("anthropic", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
)


def embedded_config(env: Mapping[str, str]) -> FileConfig:
    """The embedded defaults for the environment `env` (read, never stored beyond the keys)."""
    providers: list[dict[str, Any]] = []
    for kind, key_name, url_name in _VENDORS:
        key = env.get(key_name, "").strip()
        if key:
            provider: dict[str, Any] = {"name": kind, "kind": kind, "api_key": key}
            base_url = env.get(url_name, "").strip()
            if base_url:
                provider["base_url"] = base_url
            providers.append(provider)
    if not providers:
        patterns = ["*", *MODELS]
        providers.append({"name": MOCK_PROVIDER, "kind": "mock", "model_patterns": patterns})
    return FileConfig.model_validate(
        {
            "project": "default",
            "server": {"host": "127.0.0.1", "auth": "open"},
            "state": "memory",
            "providers": providers,
        }
    )
