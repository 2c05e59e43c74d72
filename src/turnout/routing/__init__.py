"""The routing engine. No I/O imports here: no HTTP clients, databases or caches."""

from __future__ import annotations

from turnout.record import AttemptEntry, RoutingRecord
from turnout.routing.client import ChatClient
from turnout.routing.clock import Clock, FakeClock, LoopClock
from turnout.routing.health import Breaker, Health
from turnout.routing.options import RouteOptions
from turnout.routing.plan import CallerCredential, RequestPlan, TargetPlan, TargetRule
from turnout.routing.route import Route
from turnout.routing.target import Target

__all__ = [
    "AttemptEntry",
    "Breaker",
    "CallerCredential",
    "ChatClient",
    "Clock",
    "FakeClock",
    "Health",
    "LoopClock",
    "RequestPlan",
    "Route",
    "RouteOptions",
    "RoutingRecord",
    "Target",
    "TargetPlan",
    "TargetRule",
]
