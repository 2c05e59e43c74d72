"""The per-request lookups of one runtime, built over it and handed to it
(`turnout.gateway.runtime.lookups`): where a request goes (`Resolver`, or a named consumer's
assignment), its plan (`RequestPlanner`) and the models a caller may use; and the response
cache each runtime keeps; `build_runtime` and `embedded_runtime` build a
runtime with them.

Rule 1: the resolver and the planner are built with the runtime; the consumers' resolution
and the response cache (over the runtime's state store) on first use.
Rule 2: a passthrough target no caller's own credential reaches is a load-time warning.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from turnout.access.keys import Caller
from turnout.errors import RoutingError
from turnout.gateway.resolution.cache import ChatCache
from turnout.gateway.resolution.consumers import ConsumerRoutes
from turnout.gateway.resolution.request_plans import RequestPlanner
from turnout.gateway.resolution.resolve import Resolver
from turnout.gateway.runtime.live import Runtime
from turnout.state.cache import ResponseCache

if TYPE_CHECKING:
    from turnout.access.keys import Credentials
    from turnout.gateway.runtime.route_entry import Endpoint, Resolution

__all__ = ["ProjectLookups", "build_runtime", "chat_cache", "embedded_runtime"]


class ProjectLookups:
    """The lookups of `runtime` (see the module rules)."""

    __slots__ = (
        "_consumers",
        "_planner",
        "_resolver",
        "_runtime",
        "plan_for",
        "resolve_ungranted",
        "warnings",
    )

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        routes, access = runtime.routes, runtime.access
        self._resolver = Resolver(routes, runtime.index, project=runtime.project, access=access)
        self._planner = RequestPlanner(runtime.config, routes, runtime.credential_modes, access)
        self._consumers: ConsumerRoutes | None = None
        self.resolve_ungranted = self._resolver.resolve_ungranted
        self.plan_for = self._planner.plan_for
        self.warnings = tuple(f"{path}: {text}" for path, text in self._planner.unreachable(routes))

    def resolve(
        self,
        model: str | None,
        *,
        endpoint: Endpoint,
        caller: Caller | None = None,
        consumer: str | None = None,
    ) -> Resolution:
        """Where a request for `model` on `endpoint` goes: a named `consumer`'s assignment
        (`turnout.gateway.resolution.consumers`), else `Resolver.resolve`."""
        if consumer is not None:
            who = caller if caller is not None else Caller.anonymous(self._runtime.project)
            return self.consumers.resolve(consumer, model, endpoint=endpoint, caller=who)
        return self._resolver.resolve(model, endpoint=endpoint, caller=caller)

    @property
    def consumers(self) -> ConsumerRoutes:
        """The resolution of requests naming a consumer, made on first use."""
        if self._consumers is None:
            runtime = self._runtime
            stored = runtime.stored
            self._consumers = ConsumerRoutes(
                project=runtime.project,
                consumers=(*runtime.config.consumers, *stored.dangling_consumers),
                routes=runtime.routes,
                providers=runtime.providers,
                health=runtime.health,
                access=runtime.access,
                ids=stored.ids,
                consumer_projects=stored.consumer_projects,
                default_route=stored.default_route,
            )
        return self._consumers

    def models(
        self, caller: Caller | None = None, credentials: Credentials | None = None
    ) -> list[str]:
        """The models `caller` could use (`Resolver.models`); with `credentials`, only those
        whose route keeps a target for the caller's credential mode."""
        names = self._resolver.models(caller)
        if credentials is None:
            return names
        return [name for name in names if self.can_use(name, caller, credentials)]

    def can_use(
        self, model: str, caller: Caller | None = None, credentials: Credentials | None = None
    ) -> bool:
        """Whether `model` resolves for `caller` on chat completions and, with `credentials`,
        its route keeps a target for the caller's credential mode."""
        try:
            resolution = self.resolve(model, endpoint="chat", caller=caller)
        except RoutingError:
            return False
        if credentials is None:
            return True
        own = credentials.own_credential is not None
        return self._planner.serves(resolution, own_credential=own, endpoint="chat")


def chat_cache(runtime: Runtime) -> ChatCache:
    """The response cache of every route of `runtime` with `cache.enabled`, over its state
    store, made on first use and kept for the runtime's life."""
    return runtime.kept(_new_chat_cache)


def _new_chat_cache(runtime: Runtime) -> ChatCache:
    return ChatCache(ResponseCache(runtime.state, clock=runtime.clock))


build_runtime = partial(Runtime.from_config, lookups=ProjectLookups)
"""`Runtime.from_config` with these lookups."""

embedded_runtime = partial(Runtime.embedded, lookups=ProjectLookups)
"""`Runtime.embedded` with these lookups."""
