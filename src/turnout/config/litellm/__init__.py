"""Convert a LiteLLM proxy config into a turnout configuration.

`convert_litellm(text)` reads the LiteLLM YAML and returns an `ImportResult`: the turnout
configuration as YAML text, whose header comments list every setting that could not be carried
(also returned in `.notes`, each naming its LiteLLM path), and the environment variables the
configuration reads. `main_import_litellm(path, out)` is what `turnout import litellm FILE` runs.

What maps to what:
- `model_list` deployments -> providers (merged when kind, base URL, key, API version and
  headers are equal) and targets; deployments sharing a `model_name` -> one route serving that
  model name, so callers keep the model string they used; a wildcard `model_name` -> a route
  serving model patterns. Each provider declares the models it serves (`model_patterns`), so
  no family route serves a model LiteLLM would refuse.
- `router_settings` / `litellm_settings`: routing strategy, retries (within the static budget of
  10 attempts), timeouts, cooldowns (-> `defaults.circuit_breaker`), aliases, fallbacks of three
  kinds, the response cache and Redis (-> `state`).
- `general_settings.master_key` -> a caller key under `server.auth: keys`; without one,
  `server.auth: open` on loopback.
- `os.environ/VAR` -> `${VAR}`; a literal secret is never copied: it becomes
  `${TURNOUT_IMPORTED_KEY_n}` with a note telling which variable to set.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from turnout.config.litellm._deployments import read_deployments
from turnout.config.litellm._links import apply_aliases, apply_fallbacks, drop_shared_models
from turnout.config.litellm._notes import Notes
from turnout.config.litellm._providers import name_providers, provider_configs
from turnout.config.litellm._render import referenced_variables, render
from turnout.config.litellm._routes import build_route, group_targets, name_routes
from turnout.config.litellm._settings import Settings, read_settings, server_sections
from turnout.config.litellm._values import Secrets
from turnout.errors import ConfigError

if TYPE_CHECKING:
    from typing import TextIO

    from turnout.config.litellm._deployments import Deployment

__all__ = ["ImportResult", "convert_litellm", "main_import_litellm"]

# libyaml's parser when PyYAML was built with it: the same documents, many times faster.
_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True, slots=True)
class ImportResult:
    """A converted configuration.

    - `yaml`: the turnout configuration as YAML text, notes as `# ` comments at the top;
    - `notes`: one line per LiteLLM setting not carried (or carried differently), each with
      its LiteLLM path, e.g. `not carried: router_settings.enable_pre_call_checks (…)`;
    - `variables`: every environment variable the configuration reads, in order of first use.
    """

    yaml: str
    notes: list[str] = field(default_factory=list)
    variables: list[str] = field(default_factory=list)


def convert_litellm(text: str) -> ImportResult:
    """Convert LiteLLM proxy config YAML `text`. Raises `ConfigError` when `text` is not YAML
    or not a mapping; everything else that cannot be carried becomes a note."""
    document = _parse(text)
    notes, secrets = Notes(), Secrets()
    deployments = read_deployments(document.get("model_list"), secrets, notes)
    settings = read_settings(document, secrets, notes)
    config = _assemble(deployments, settings, notes)
    variables = referenced_variables(config)
    return ImportResult(render(config, notes.lines(), variables), notes.lines(), variables)


def _parse(text: str) -> dict[str, Any]:
    try:
        document = yaml.load(text, Loader=_Loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(file)"
        problem = getattr(exc, "problem", None) or "not YAML"
        raise ConfigError(f"invalid YAML at {where}: {problem}", [(where, problem)]) from None
    if document is None:
        return {}
    if not isinstance(document, dict):
        rule = "must be a mapping with model_list, router_settings …"
        raise ConfigError(f"a LiteLLM config {rule}", [("(root)", rule)])
    return document


def _assemble(deployments: list[Deployment], settings: Settings, notes: Notes) -> dict[str, Any]:
    route_names = name_routes(d.group for d in deployments)
    groups = group_targets(deployments, route_names, notes)
    targets = [d for members in groups.values() for d in members]
    providers = name_providers((d.provider for d in targets), route_names.values())
    drafts = [
        build_route(route_names[group], members, providers, settings.policy, notes)
        for group, members in groups.items()
    ]
    drop_shared_models(drafts, notes)
    names = [*route_names.values(), *providers.values()]
    aliases = apply_aliases(settings.aliases, settings.aliases_path, drafts, names, notes)
    apply_fallbacks(settings.fallbacks, drafts, aliases, notes)
    access = server_sections(settings.master_key)
    config: dict[str, Any] = {"server": access.pop("server")}
    if settings.state is not None:
        config["state"] = settings.state
    if settings.breaker:
        config["defaults"] = {"circuit_breaker": settings.breaker}
    config["providers"] = provider_configs(targets, providers, notes)
    config["routes"] = [draft.as_config() for draft in drafts]
    config.update(access)
    return config


def main_import_litellm(path: str, out: TextIO, *, err: TextIO | None = None) -> int:
    """Convert the LiteLLM config at `path` and write the turnout YAML to `out`.

    Returns the exit code: 0 on success, 1 when the file cannot be read or is not a LiteLLM
    config (the reason goes to `err`, default standard error). Notes are in the YAML itself.
    """
    errors = sys.stderr if err is None else err
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        errors.write(f"turnout import litellm: cannot read {path}: {exc.strerror}\n")
        return 1
    try:
        result = convert_litellm(text)
    except ConfigError as exc:
        errors.write(f"turnout import litellm: {path}: {exc}\n")
        return 1
    out.write(result.yaml)
    return 0
