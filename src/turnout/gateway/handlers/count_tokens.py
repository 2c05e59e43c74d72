"""`POST /v1/messages/count_tokens`: the first target of the resolved route that speaks
Anthropic Messages answers, without failover; with none, 404 in Anthropic's format. Never a
made-up count. Only a target the request's plan lets start may count, with the caller's
credential when it is a passthrough target. A session pinned to a family on a cross-provider
route counts with the first such target of that family, or not at all: a count from another
family's tokenizer would be a made-up one for the session."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from turnout.errors import NotFound
from turnout.gateway.exchange import request_id_header
from turnout.gateway.handlers.chat import decode_body, session_of
from turnout.gateway.resolution.consumers import CONSUMER_HEADER
from turnout.gateway.responses.respond import header_value, json_reply
from turnout.providers import facts_of
from turnout.routing.plan import caller_client

if TYPE_CHECKING:
    from turnout.gateway.handlers.settings import ServedExchange
    from turnout.routing.plan import RequestPlan
    from turnout.routing.route import Route
    from turnout.routing.target import Target

__all__ = ["counting_target", "handle_count_tokens"]


def counting_target(route: Route, plan: RequestPlan | None = None) -> Target | None:
    """The first target of `route` whose provider speaks Anthropic Messages and counts tokens
    (among the targets `plan` lets start, when given, and of the family the plan's session is
    pinned to on `route`, when it is)."""
    part = plan.for_route(route) if plan is not None else None
    pinned = plan.pinned_family(route) if plan is not None and part is not None else None
    for index, target in enumerate(route.targets):
        client: Any = target.client
        rule = part.rule(index) if part is not None else None
        if part is not None and (rule is None or rule.fallback or rule.skip is not None):
            continue
        if pinned is not None and (rule is None or rule.family != pinned):
            continue
        if facts_of(client).counts_tokens:
            return target
    return None


async def handle_count_tokens(exchange: ServedExchange) -> None:
    """Count the prompt's input tokens upstream; `{"input_tokens": n}`."""
    caller = exchange.caller()
    request, _ = decode_body(exchange)
    # Resolved as chat (every target), so that a route without an Anthropic target is a 404
    # here rather than the messages endpoint's NO_ROUTE.
    resolution = exchange.runtime.resolve(
        request.model,
        endpoint="chat",
        caller=caller,
        consumer=exchange.headers.get(CONSUMER_HEADER),
    )
    route = resolution.route
    plan = exchange.runtime.plan_for(
        resolution, caller, exchange.credentials, endpoint="count_tokens"
    )
    plan = await exchange.runtime.pins.before(plan, session_of(exchange.headers, request))
    target = counting_target(route, plan)
    if target is None:
        pinned = plan.pinned_family(route) if plan is not None else None
        among = f' of the "{pinned}" family this session is pinned to' if pinned else ""
        raise NotFound(
            f'no target{among} of route "{route.name}" speaks Anthropic Messages, so its tokens '
            "cannot be counted"
        )
    if target.model is not None:
        request.model = target.model
    client: Any = target.client
    part = plan.for_route(route) if plan is not None else None
    rule = part.rule(route.targets.index(target)) if part is not None else None
    if rule is not None and rule.caller_credential:
        client = caller_client(client, plan.credential if plan is not None else None)
    count = await client.count_tokens(request)
    model = request.model or ""
    headers = [
        request_id_header(exchange.reply_id()),
        (b"x-turnout-route", header_value(route.name)),
        (b"x-turnout-target", header_value(target.name)),
        (b"x-turnout-model", header_value(model)),
    ]
    await exchange.reply(json_reply(200, {"input_tokens": count}, headers))
