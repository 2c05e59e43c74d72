"""The session pins of cross-provider routes around one routed request, kept in the state
store (in memory, or in Redis so that every replica sees them).

Rule 1: only a request with a session id whose plan orders some route by family reads or
writes pins; every other request costs one check. Without a session id the engine still tries
the first target's family first, per request, and nothing is pinned.
Rule 2: before the call, the pin of each route of the plan that orders by family is read and
its TTL restarted (`session_pin_ttl_seconds` after the session's last request); the plan then
carries the pins (`RequestPlan.with_pins`).
Rule 3: after a success (an accepted answer, or a stream that ended cleanly) the session is
pinned to the family of the target that served, on the route that served it (the route asked
or a fallback route): a success on another family re-pins, one on the pinned family was
already refreshed by Rule 2. A success reached by an outage crossing (the engine marks the
first call in the other family `family_switch: outage`) writes nothing: only a quota crossing
moves a session, so after an outage it returns to its family.
Rule 5: a request without a pin (a new session's first request, or one without a session id)
that carries server tools of one wire format (an Anthropic `web_search`; not one the caller
allows to be dropped, `turnout.wire.tool_kinds`) starts on that format's family, whose targets
can run them; the other family's targets are ineligible for it anyway
(`turnout.routing.target`). The family it is then pinned to is the one that served (Rule 3).
Rule 4: pins never fail a call: a read that fails counts as no pin and a write that fails is
skipped. The first failure is logged as a warning with the store's error, later ones at debug
level (the state layer reports its own health in `/readyz`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from turnout.access.policies import WIRE_FAMILIES
from turnout.wire.tool_kinds import carriage

if TYPE_CHECKING:
    from turnout.record import RoutingRecord
    from turnout.routing.plan import RequestPlan, TargetPlan
    from turnout.routing.route import Route
    from turnout.state.sessions import SessionPins
    from turnout.wire.model import ChatRequest

__all__ = ["PinStep"]

logger = logging.getLogger("turnout.gateway.sessions")


class PinStep:
    """Reads and writes the family pins of one runtime's sessions over `pins` (see the
    module rules)."""

    __slots__ = ("_warned", "pins")

    def __init__(self, pins: SessionPins) -> None:
        self.pins = pins
        self._warned = False

    async def before(
        self,
        plan: RequestPlan | None,
        session_id: str | None,
        request: ChatRequest | None = None,
    ) -> RequestPlan | None:
        """`plan` carrying the session's pins, refreshed (Rules 1, 2), or the family the
        request's server tools need (Rule 5); `plan` itself when there is nothing to read."""
        if plan is None or not plan.orders_by_family:
            return plan
        needed = _server_tool_family(request)
        if session_id is None and needed is None:
            return plan
        found: dict[str, str] = {}
        for route, target_plan in plan.routes.items():
            if not target_plan.families or route.route_id in found:
                continue
            family = None
            if session_id is not None:
                family = await self._read(route.route_id, session_id)
            family = family or needed
            if family is not None:
                found[route.route_id] = family
        return plan.with_pins(found) if found else plan

    async def after(
        self,
        plan: RequestPlan | None,
        session_id: str | None,
        record: RoutingRecord | None,
        request: ChatRequest | None = None,
    ) -> None:
        """Pin the session to the family that served (Rule 3); nothing when none did. A
        request that started on its server tools' family (Rule 5) always writes the pin: the
        plan's pin for it was not read from the store."""
        if plan is None or session_id is None or record is None or record.answered is None:
            return
        if not plan.orders_by_family or record.target_index is None:
            return
        served = _served_route(plan, record)
        if served is None:
            return
        route, target_plan = served
        rule = target_plan.rule(record.target_index)
        family = rule.family if rule is not None else None
        if family is None:
            return
        if family == plan.pinned_family(route) and _server_tool_family(request) is None:
            return
        if _crossing(record) == "outage":
            return
        try:
            await self.pins.pin(route.route_id, session_id, family)
        except Exception as exc:  # noqa: BLE001 - Rule 4: a pin never fails a call
            self._failed("write", exc)

    async def _read(self, route_id: str, session_id: str) -> str | None:
        try:
            family = await self.pins.get(route_id, session_id)
            if family is not None:
                await self.pins.refresh(route_id, session_id)
        except Exception as exc:  # noqa: BLE001 - Rule 4: a pin never fails a call
            self._failed("read", exc)
            return None
        return family

    def _failed(self, action: str, exc: Exception) -> None:
        log = logger.debug if self._warned else logger.warning
        self._warned = True
        log("session pin %s failed, the request goes on without it: %r", action, exc)


def _server_tool_family(request: ChatRequest | None) -> str | None:
    """The family whose wire format the request's server tools are written for (Rule 5)."""
    if request is None or not request.tools:
        return None
    for tool in request.tools:
        if tool.native is not None and carriage(tool, request) == "ineligible":
            return WIRE_FAMILIES.get(tool.native.format)
    return None


def _crossing(record: RoutingRecord) -> str | None:
    """How the serving call's pass crossed to another family: the `family_switch` of the
    last entry up to the answering one that has one (None: no crossing)."""
    answered = False
    for entry in reversed(record.attempts):
        answered = answered or entry.outcome == "answered"
        if answered and entry.family_switch is not None:
            return entry.family_switch
    return None


def _served_route(plan: RequestPlan, record: RoutingRecord) -> tuple[Route, TargetPlan] | None:
    """The route of the plan that served (the last fallback route hopped to, else the first)
    and its target plan."""
    name = record.fallback_route or record.route
    for route, target_plan in plan.routes.items():
        if route.name == name:
            return route, target_plan
    return None
