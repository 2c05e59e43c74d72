"""The runtimes of every project of one store snapshot, served with the config file: one
`ServedProjects`.

Rule 1: one `Runtime` per project of the snapshot (`project_config`: the project's stored
objects over the file), every one on the file's state store settings and one shared state
store.
Rule 2: a project whose configuration did not change keeps its runtime object (pools, caches,
health); a changed one is rebuilt on the previous one's health registry (its breakers,
cooldowns and parks carry over) unless the health policy changed.
Rule 3: a consumer whose route or provider left the config file is served apart from the
validator (it meets 503 NO_ROUTE) instead of refusing its whole project.
Rule 4: a project the validator refuses keeps its previous runtime (or is not served), with an
ERROR line; the file's project refused without a previous runtime is a `ConfigError`, and so is
a snapshot without the file's project.
Rule 5: the store's revoked keys are held by hash, each as the caller it stood for.
"""

from __future__ import annotations

import logging
from types import MappingProxyType
from typing import TYPE_CHECKING

from turnout.access.keys import Caller, KeyRing
from turnout.config.stored import project_config
from turnout.errors import ConfigError
from turnout.gateway.runtime.live import Runtime, StoredFacts
from turnout.gateway.runtime.served import ServedProjects

if TYPE_CHECKING:
    from turnout.gateway.runtime.live import LookupsFactory
    from turnout.routing.clock import Clock
    from turnout.schema import ConsumerConfig, FileConfig
    from turnout.state.base import StateStore
    from turnout.store.snapshot import StoreSnapshot

__all__ = ["build_served"]

logger = logging.getLogger("turnout.gateway")


def build_served(
    file: FileConfig,
    snapshot: StoreSnapshot,
    *,
    lookups: LookupsFactory,
    embedded: bool = False,
    clock: Clock | None = None,
    previous: ServedProjects | None = None,
    state: StateStore | None = None,
) -> ServedProjects:
    """The runtimes of every project of `snapshot` served with `file` (the embedded defaults
    when `embedded`), each with the lookups `lookups` builds, over `previous` (Rule 2). Raises
    `ConfigError` as Rule 4 says."""
    consumer_projects = MappingProxyType(
        {
            object_id: name
            for name, project in snapshot.projects.items()
            for (kind, _), object_id in project.ids.items()
            if kind == "consumer"
        }
    )
    runtimes: dict[str, Runtime] = {}
    warnings: list[str] = []
    for name, project in snapshot.projects.items():
        primary = name == file.project
        config, dangling = _split_dangling(project_config(file, project))
        stored = StoredFacts(
            project.ids, project.id or None, project.default_route, consumer_projects, dangling
        )
        before = previous.runtimes.get(name) if previous is not None else None
        if before is not None and before.config == config and before.stored == stored:
            runtimes[name] = before
            continue
        try:
            runtime = Runtime.from_config(
                config,
                lookups=lookups,
                clock=clock,
                stored=stored,
                health=before.health if before is not None else None,
                state=state,
            )
        except ConfigError as exc:
            if primary and before is None:
                raise
            problems = "; ".join(f"{path}: {message}" for path, message in exc.errors)
            logger.error(  # noqa: TRY400 - the problems are the message
                'project "%s" at store version %d is refused, %s: %s',
                name,
                snapshot.version,
                "still serving its previous configuration" if before else "not served",
                problems or str(exc),
            )
            if before is not None:
                runtimes[name] = before
            continue
        if primary and embedded:
            runtime = runtime.with_mock_messages()
        runtimes[name] = runtime
        if name != file.project:
            warnings.extend(f'project "{name}": {text}' for text in runtime.warnings)
    if file.project not in runtimes:
        raise ConfigError(f"project {file.project!r} is not in the store")
    return ServedProjects(
        runtimes,
        file.project,
        version=snapshot.version,
        warnings=tuple(warnings),
        revoked=_revoked_keys(snapshot),
    )


def _revoked_keys(snapshot: StoreSnapshot) -> KeyRing:
    """Rule 5: the store's revoked keys by hash, each as the caller it stood for (its name and
    project), to log and audit the requests that still present it."""
    return KeyRing(
        (digest, Caller(name, key))
        for name, project in snapshot.projects.items()
        for key, digest in project.revoked_keys
    )


def _split_dangling(config: FileConfig) -> tuple[FileConfig, tuple[ConsumerConfig, ...]]:
    """Rule 3: the configuration without the consumers whose route or provider left the config
    file (their rows are kept for them), and those consumers: they are served, and meet
    NO_ROUTE, rather than failing their whole project. A consumer whose agent is one of them is
    too."""
    routes = {route.name for route in config.routes}
    providers = {provider.name for provider in config.providers}
    dangling: dict[str, ConsumerConfig] = {}
    changed = True
    while changed:
        changed = False
        for consumer in config.consumers:
            if consumer.name in dangling:
                continue
            if (
                (consumer.model_route is not None and consumer.model_route not in routes)
                or (consumer.provider is not None and consumer.provider not in providers)
                or (consumer.agent is not None and consumer.agent in dangling)
            ):
                dangling[consumer.name] = consumer
                changed = True
    if not dangling:
        return config, ()
    kept = tuple(consumer for consumer in config.consumers if consumer.name not in dangling)
    return config.model_copy(update={"consumers": kept}), tuple(dangling.values())
