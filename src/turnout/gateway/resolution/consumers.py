"""The first step of resolution: a consumer named by the `x-turnout-consumer` header (its id or
its name) and its assignment.

Rule 1: a consumer's effective assignment is the one the validator uses
(`turnout.access.consumers.effective_assignment`): its own route (agents), else its own provider
pin, else, for a memory, its agent's pin, then its agent's route; else the project's default.
Rule 2: a route assignment serves the request exactly as the route's name would (its targets
and policy); a route that is not served (it left the configuration file) is 503 NO_ROUTE, never
another route. A provider pin is one target with the provider's defaults and no failover: the
consumer's `model`, else the request's.
Rule 3: the consumer must belong to the caller's project: an id of another project's consumer is
403 `consumer_not_allowed`; an unknown id or name is 404 `NOT_FOUND` naming the header.
Rule 4: the key's ceilings and the access policy still apply (a deny binding refuses, a model
no grant allows is denied); a grant's route never replaces the consumer's assignment.
Rule 5: pin routes are built on first use and kept (bounded) for the runtime's life; they share
the runtime's health, so a pinned provider's breaker is the provider's breaker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from turnout.access.consumers import Assignment, effective_assignment
from turnout.access.keys import ceiling_check
from turnout.access.served_routes import MESSAGES_WIRE
from turnout.errors import ConsumerNotAllowed, EmbeddingsNotSupported, NoRoute, NotFound
from turnout.gateway.runtime.build import supports_embeddings
from turnout.gateway.runtime.route_entry import Resolution, RouteEntry
from turnout.providers import facts_of
from turnout.routing.options import RouteOptions
from turnout.routing.route import Route
from turnout.routing.target import Target

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.access.bindings import AccessPolicy
    from turnout.access.keys import Caller
    from turnout.gateway.runtime.route_entry import Endpoint
    from turnout.routing.health import Health
    from turnout.schema import ConsumerConfig

__all__ = ["CONSUMER_HEADER", "ConsumerRoutes"]

CONSUMER_HEADER: Final = "x-turnout-consumer"
"""The request header naming a consumer (its id or its name)."""

_MAX_PINS: Final = 1024


class ConsumerRoutes:
    """Resolves requests that name a consumer, for one runtime (see the module rules).

    `consumers` are the project's; `ids` the stored ids by `(kind, name)` (consumers' kind is
    `consumer`); `consumer_projects` maps every stored consumer id of every project to its
    project's name; `default_route` is the project's default route name.
    """

    __slots__ = (
        "_access",
        "_by_id",
        "_by_name",
        "_default_route",
        "_foreign",
        "_health",
        "_ids",
        "_pins",
        "_project",
        "_providers",
        "_routes",
    )

    def __init__(
        self,
        *,
        project: str,
        consumers: tuple[ConsumerConfig, ...],
        routes: Mapping[str, RouteEntry],
        providers: Mapping[str, Any],
        health: Health,
        access: AccessPolicy,
        ids: Mapping[tuple[str, str], str],
        consumer_projects: Mapping[str, str],
        default_route: str | None,
    ) -> None:
        self._project = project
        self._by_name = {consumer.name: consumer for consumer in consumers}
        self._by_id = {
            ids[("consumer", consumer.name)]: consumer
            for consumer in consumers
            if ("consumer", consumer.name) in ids
        }
        self._foreign = consumer_projects
        self._routes = routes
        self._providers = providers
        self._health = health
        self._access = access
        self._ids = ids
        self._default_route = default_route
        self._pins: dict[tuple[str, str | None], RouteEntry] = {}

    def find(self, reference: str) -> ConsumerConfig:
        """Rule 3: the consumer `reference` names (an id, else a name)."""
        found = self._by_id.get(reference) or self._by_name.get(reference)
        if found is not None:
            return found
        other = self._foreign.get(reference)
        if other is not None and other != self._project:
            raise ConsumerNotAllowed(
                f"{CONSUMER_HEADER}: consumer {reference!r} belongs to another project than the "
                f"caller's ({self._project!r})"
            )
        raise NotFound(f"{CONSUMER_HEADER}: no consumer {reference!r} in project {self._project!r}")

    def resolve(
        self, reference: str, model: str | None, *, endpoint: Endpoint, caller: Caller
    ) -> Resolution:
        """Rules 1-4: where a request of `caller` naming consumer `reference` goes."""
        consumer = self.find(reference)
        agent = self._by_name.get(consumer.agent) if consumer.agent is not None else None
        assignment = effective_assignment(
            Assignment.from_config(consumer),
            agent=None if agent is None else Assignment.from_config(agent),
            default_route=self._default_route,
        )
        if assignment.is_empty:
            raise NoRoute(
                f'consumer "{consumer.name}" has no route or provider pin and project '
                f'"{self._project}" has no default route'
            )
        if model and not self._access.is_open:
            self._access.decide(caller, model)  # Rule 4: a deny or a missing grant refuses
        if assignment.route is not None:
            entry = self._routes.get(assignment.route)
            if entry is None or entry.kind != "configured":
                how = "is assigned" if assignment.inherited_from is None else "inherits"
                raise NoRoute(
                    f'consumer "{consumer.name}" {how} route "{assignment.route}", which is not '
                    "served: it is no longer in the configuration"
                )
            wire_model = model or ""
        else:
            provider = assignment.provider or ""
            entry = self._pin(consumer.name, provider, assignment.model)
            wire_model = assignment.model or model or ""
        route = entry.route_for(endpoint)
        if route is None:
            reason = entry.reasons.get("messages" if endpoint == "count_tokens" else endpoint, "")
            if endpoint == "embeddings":
                raise EmbeddingsNotSupported(reason)
            raise NoRoute(reason)
        ceiling_check(caller, entry.name, model or None)
        return Resolution(entry, route, wire_model, "consumer")

    def _pin(self, consumer: str, provider: str, model: str | None) -> RouteEntry:
        """Rule 5: the one-target route of a provider pin."""
        key = (provider, model)
        held = self._pins.get(key)
        if held is not None:
            return held
        client = self._providers.get(provider)
        if client is None:
            raise NoRoute(
                f'consumer "{consumer}" is pinned to provider "{provider}", which is not served: '
                "it is no longer in the configuration"
            )
        target = Target(provider, client, model=model)
        route = Route.from_options(
            provider,
            [target],
            RouteOptions.build(max_attempts=1),
            health=self._health,
            route_id=self._ids.get(("provider", provider)),
            generated=True,
        )
        speaks_messages = facts_of(client).wire_format == MESSAGES_WIRE
        reasons: dict[str, str] = {}
        if not speaks_messages:
            reasons["messages"] = f'provider "{provider}" does not speak Anthropic Messages'
        if not supports_embeddings(client):
            reasons["embeddings"] = f'provider "{provider}" does not offer embeddings'
        entry = RouteEntry(
            provider,
            "implicit",
            None,
            route,
            route if speaks_messages else None,
            route if supports_embeddings(client) else None,
            False,
            (),
            reasons=reasons,
        )
        if len(self._pins) >= _MAX_PINS:
            self._pins.clear()
        self._pins[key] = entry
        return entry
