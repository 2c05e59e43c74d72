"""What a runtime is handed by the rooms above it: the per-request lookups of its project.

Rule 1: the lookups are built over the runtime once it holds its live objects (the
runtime's `LookupsFactory` is called with it), and live as long as it does: a new
configuration builds a new runtime and new lookups, with empty caches.
Rule 2: they answer where a request goes, its plan and which models a caller may use;
load-time remarks they find (`warnings`, each `path: message`) join the runtime's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable

    from turnout.access.keys import Caller, Credentials
    from turnout.gateway.runtime.route_entry import Endpoint, Resolution
    from turnout.routing.plan import RequestPlan

__all__ = ["Lookups"]


class Lookups(Protocol):
    """The per-request lookups of one runtime (see the module rules)."""

    @property
    def warnings(self) -> tuple[str, ...]:
        """Load-time remarks, each `path: message`."""
        ...

    def resolve(
        self,
        model: str | None,
        *,
        endpoint: Endpoint,
        caller: Caller | None = None,
        consumer: str | None = None,
    ) -> Resolution:
        """Where a request for `model` on `endpoint` goes (the empty-model rule, then the
        caller's grant, alias, route name, model pattern and family route, then the key's
        ceilings). `caller` None is the anonymous caller, without ceilings. A `consumer` (the
        `x-turnout-consumer` header: a consumer's id or name) comes first: its assignment
        decides.

        Raises `RoutingError` subclasses, each with its `.status` and `.code`: `NoRoute`,
        `UpstreamAmbiguous`, `EmbeddingsNotSupported`, `ModelNotAllowed`, `ModelDenied`,
        `PolicyDenied`; with a consumer, `NotFound` and `ConsumerNotAllowed` too.
        """
        ...

    def resolve_ungranted(self, model: str, *, endpoint: Endpoint) -> Resolution:
        """Where `model` would go without a grant naming a route (alias, name, pattern,
        family route); raises `NoRoute`, `UpstreamAmbiguous` or `EmbeddingsNotSupported`."""
        ...

    def plan_for(
        self,
        resolution: Resolution,
        caller: Caller,
        credentials: Callable[[], Credentials],
        *,
        endpoint: Endpoint,
    ) -> RequestPlan | None:
        """The per-request plan of a resolved request (credential filter, org-key fallback,
        policies), None when the route runs as configured. `credentials()` gives the request's
        credential headers, read only when needed. Raises `NoRoute` (503) or `PolicyDenied`
        (403) before any call."""
        ...

    def models(
        self, caller: Caller | None = None, credentials: Credentials | None = None
    ) -> list[str]:
        """The models `caller` could use, for `GET /v1/models`: configured route names,
        aliases and exact model patterns that resolve for it, sorted; with `credentials`,
        only those whose route keeps a target for the caller's credential mode."""
        ...

    def can_use(
        self, model: str, caller: Caller | None = None, credentials: Credentials | None = None
    ) -> bool:
        """Whether `caller` could send `model` to chat completions, for `GET /v1/models/{id}`:
        it resolves for the caller (grants and the key's ceilings included) and, with
        `credentials`, its route keeps a target for the caller's credential mode."""
        ...
