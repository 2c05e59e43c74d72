"""Rules that relate configuration objects to one another (SPEC §7.2).

`check_config(config)` returns every violation as `(path, message)`; the file loader and the admin
API call it alike, so a rule has one wording wherever it fires.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from turnout.config.schema import FileConfig

__all__ = ["check_config"]


def check_config(config: FileConfig) -> list[tuple[str, str]]:
    """Every cross-object violation in `config`, in file order."""
    errors: list[tuple[str, str]] = []
    errors.extend(_check_names(config))
    errors.extend(_check_targets(config))
    return errors


def _check_names(config: FileConfig) -> list[tuple[str, str]]:
    """Routes and providers share one name space per project (409 NAME_TAKEN on the API)."""
    errors: list[tuple[str, str]] = []
    seen: dict[str, str] = {}
    named = [("providers", i, p.name) for i, p in enumerate(config.providers)]
    named += [("routes", i, r.name) for i, r in enumerate(config.routes)]
    for kind, i, name in named:
        if name in seen:
            errors.append((f"{kind}[{i}].name", f"name '{name}' is already taken by {seen[name]}"))
        else:
            seen[name] = f"{kind}[{i}]"
    return errors


def _check_targets(config: FileConfig) -> list[tuple[str, str]]:
    """Each target names a provider of the project; target names are unique within a route."""
    errors: list[tuple[str, str]] = []
    providers = {p.name for p in config.providers}
    for r, route in enumerate(config.routes):
        names: set[str] = set()
        for t, target in enumerate(route.targets):
            path = f"routes[{r}].targets[{t}]"
            if target.provider not in providers:
                errors.append(
                    (f"{path}.provider", f"no provider named '{target.provider}' in the project")
                )
            if target.display_name in names:
                errors.append(
                    (f"{path}.name", f"two targets of the route are named '{target.display_name}'")
                )
            names.add(target.display_name)
    return errors
