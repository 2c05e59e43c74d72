"""The dashboard's HTML, rendered on the server: the whole page, the parts that refresh
themselves, one request's routing record, and the sign-in form.

Rule 1: every value is escaped (`_e`); nothing from a request or the configuration reaches the
page unescaped.
Rule 2: each refreshing part is one element whose id matches its URL (`/ui/part/<id>`), swapped
whole by htmx every few seconds; the charts are drawn by `dashboard.js` from `/ui/data.json`.
Rule 3: no asset comes from another site: scripts and styles are served from `/ui/assets/`.
"""

from __future__ import annotations

import html
import json
import os
import socket
from typing import TYPE_CHECKING, Any

from turnout.record import CALL_OUTCOMES

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from turnout.gateway.observe.activity import RecentRequest
    from turnout.gateway.ui.request_search import Listed, RequestQuery
    from turnout.gateway.ui.route_view import RoutePage, TargetLine
    from turnout.gateway.ui.views import HealthRow, RequestRow, RouteView, RoutingTestResult

__all__ = [
    "health_part",
    "login_page",
    "page",
    "record_page",
    "replica_name",
    "requests_page",
    "requests_part",
    "route_page",
    "routes_part",
    "routing_test_part",
    "spend_loading",
    "spend_page",
    "spend_part",
    "test_page",
]

_STATE_WORDS = {
    "available": "healthy",
    "cooling_down": "cooling down",
    "open": "breaker open",
    "half_open": "probing",
    "parked": "parked",
}


_NO_SCRIPT = (
    "<noscript><p class='muted'>The charts are drawn by JavaScript; their figures are at "
    "<a href='/ui/data.json'>/ui/data.json</a>.</p></noscript>"
)


def _e(value: object) -> str:
    """Rule 1."""
    return html.escape(str(value), quote=True)


def _head(title: str) -> str:
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{_e(title)}</title>"
        "<link rel='stylesheet' href='/ui/assets/uPlot.min.css'>"
        "<link rel='stylesheet' href='/ui/assets/dashboard.css'>"
        "<script src='/ui/assets/htmx.min.js' defer></script>"
        "<script src='/ui/assets/uPlot.iife.min.js' defer></script>"
        "<script src='/ui/assets/dashboard.js' defer></script>"
        "</head>"
    )


def replica_name() -> str:
    """This replica's name as every page shows it: the host's name and this worker's
    process id (the dashboard's charts and recent requests are this process's)."""
    return f"{socket.gethostname()} · pid {os.getpid()}"


def _header(where: str, *, sign_out: bool = False, selector: str = "") -> str:
    """Every page's header: home, where the page is, the project selector (the dashboard's
    page only), the replica serving it, and Sign out."""
    out = (
        "<form method='post' action='/ui/logout'><button class='link'>Sign out</button></form>"
        if sign_out
        else ""
    )
    return (
        "<header><h1><a href='/ui'>turnout</a></h1>"
        f"<span class='muted'>{_e(where)}</span>{selector}"
        f"<span class='muted replica' title='the replica and process serving this page'>"
        f"replica {_e(replica_name())}</span>{out}</header>"
    )


def _project_selector(projects: Sequence[str], shown: str | None) -> str:
    """A plain GET form choosing the project the dashboard shows (every project by default)."""
    if len(projects) < 2:
        return ""
    options = "".join(
        f"<option value='{_e(name)}'{' selected' if name == shown else ''}>{_e(name)}</option>"
        for name in projects
    )
    return (
        "<form method='get' action='/ui' id='project-form'><label>Project "
        f"<select name='project'><option value=''>every project</option>{options}</select>"
        "</label><button type='submit'>Show</button></form>"
    )


def _state(state: str) -> str:
    return f"<span class='state {_e(state)}'>{_e(_STATE_WORDS.get(state, state))}</span>"


def login_page(*, error: str | None = None) -> str:
    """The sign-in form (an admin key)."""
    problem = f"<p class='error' role='alert'>{_e(error)}</p>" if error else ""
    return (
        _head("turnout · sign in")
        + "<body class='login'><main><h1>turnout</h1>"
        + "<form method='post' action='/ui/login'>"
        + "<label for='key'>Admin key</label>"
        + "<input id='key' name='key' type='password' autocomplete='current-password' required>"
        + f"{problem}<button type='submit'>Sign in</button></form></main></body></html>"
    )


def page(
    *,
    projects: Sequence[str],
    health: Sequence[HealthRow],
    routes: Sequence[RouteView],
    requests: Sequence[RequestRow],
    key_names: Sequence[str],
    shown: str | None = None,
    spend: str = "",
) -> str:
    """The whole dashboard: every project's, or `shown`'s alone (`projects`: every project
    this replica serves); `spend`: the spend card's body (`spend_part`), or nothing."""
    where = f"project {shown}" if shown else f"project {', '.join(projects)}"
    models_hint = sorted({pattern for route in routes for pattern in route.serves})[:20]
    keys = "".join(f"<option value='{_e(name)}'>{_e(name)}</option>" for name in key_names)
    hints = "".join(f"<option value='{_e(model)}'>" for model in models_hint)
    return (
        _head("turnout · dashboard")
        + "<body>"
        + _header(where, sign_out=True, selector=_project_selector(projects, shown))
        + "<main>"
        + "<section class='card wide'><h2>Upstream health</h2>"
        + health_part(health, shown)
        + "</section>"
        + "<section class='card wide'><h2>Routes</h2>"
        + routes_part(routes, shown)
        + "</section>"
        + "<section class='card'><h2>Failovers, last 24 hours</h2>"
        + "<div id='failover-chart' class='chart' aria-label='failovers per route by hour'>"
        + _NO_SCRIPT
        + "</div>"
        + "</section>"
        + "<section class='card'><h2>Usage and cost per day</h2>"
        + "<div id='usage-chart' class='chart' aria-label='tokens and cost per day'>"
        + _NO_SCRIPT
        + "</div>"
        + "</section>"
        + (
            f"<section class='card wide' id='spend'><h2>Spend, last 30 days</h2>{spend}</section>"
            if spend
            else ""
        )
        + "<section class='card wide'><h2>Test routing</h2>"
        + "<form id='test-form' method='post' action='/ui/test' hx-post='/ui/part/test' "
        + "hx-target='#test' hx-swap='outerHTML'>"
        + "<label>Model <input name='model' list='models' required placeholder='gpt-4o'></label>"
        + f"<datalist id='models'>{hints}</datalist>"
        + "<label>Key <select name='key'><option value=''>(anonymous)</option>"
        + f"{keys}</select></label>"
        + "<button type='submit'>Test</button></form>"
        + "<div id='test'></div></section>"
        + "<section class='card wide'><h2>Recent requests "
        + "<a class='muted' href='/ui/requests'>find requests</a></h2>"
        + requests_part(requests)
        + "</section>"
        + "</main></body></html>"
    )


def _scope(shown: str | None) -> str:
    """The query string that keeps a page or part to the project `shown` (None: every
    project), escaped."""
    return f"?project={_e(shown)}" if shown else ""


def _refreshing(part: str, every: str, shown: str | None = None) -> str:
    """Rule 2: the attributes that make an element reload itself, kept to `shown`."""
    scope = _scope(shown)
    return (
        f"id='{part}' hx-get='/ui/part/{part}{scope}' hx-trigger='every {every}' "
        "hx-swap='outerHTML'"
    )


def health_part(rows: Sequence[HealthRow], shown: str | None = None) -> str:
    """Upstream health, per health key."""
    if not rows:
        body = (
            "<p class='muted'>No upstream called yet: health keys appear with the first call.</p>"
        )
        return f"<div {_refreshing('health', '2s', shown)}>{body}</div>"
    lines = "".join(
        f"<tr class='{_e(row.state)}'><td>{_e(row.key)}</td><td>{_state(row.state)}</td>"
        f"<td class='num'>{row.failures}</td>"
        f"<td class='num'>{'' if row.seconds_left is None else f'{row.seconds_left:.1f} s'}</td>"
        f"<td>{_e(row.project)}</td></tr>"
        for row in rows
    )
    return (
        f"<div {_refreshing('health', '2s', shown)}><table><thead><tr><th>Upstream</th>"
        "<th>State</th>"
        "<th class='num'>Failures in a row</th><th class='num'>Time left</th><th>Project</th>"
        f"</tr></thead><tbody>{lines}</tbody></table></div>"
    )


def routes_part(routes: Sequence[RouteView], shown: str | None = None) -> str:
    """Routes with their targets in try order and who may use them."""
    lines = []
    for route in routes:
        targets = "".join(
            f"<li class='target {_e(state)}' title='{_e(_STATE_WORDS.get(state, state))}'>"
            f"{_e(text)}</li>"
            for text, state in route.targets
        )
        serves = ", ".join(route.serves) or "-"
        lines.append(
            f"<tr><td><a href='/ui/routes/{_e(route.route_id)}'>"
            f"<strong>{_e(route.name)}</strong></a>"
            f"<div class='muted'>{_e(route.kind)} · {_e(route.strategy)}</div></td>"
            f"<td>{_e(serves)}</td><td><ol class='targets'>{targets}</ol>"
            f"{_fallbacks(route.fallbacks)}</td>"
            f"<td>{_e(', '.join(route.granted_by) or 'nobody')}</td></tr>"
        )
    return (
        f"<div {_refreshing('routes', '5s', shown)}><table><thead><tr><th>Route</th><th>Serves</th>"
        "<th>Targets, in try order</th><th>Granted by</th></tr></thead>"
        f"<tbody>{''.join(lines)}</tbody></table></div>"
    )


def _fallbacks(text: str) -> str:
    return f"<div class='muted'>then {_e(text)}</div>" if text else ""


def requests_part(rows: Sequence[RequestRow]) -> str:
    """The last requests, each linking to its routing record."""
    if not rows:
        body = "<p class='muted'>No request yet.</p>"
        return f"<div {_refreshing('requests', '3s')}>{body}</div>"
    lines = "".join(
        f"<tr class='{'bad' if row.status >= 400 else ''}'><td>{_e(row.time)}</td>"
        f"<td><a href='/ui/requests/{_e(row.request_id)}'>{_e(row.request_id)}</a></td>"
        f"<td>{_e(row.route)}</td><td>{_e(row.served)}</td><td class='num'>{row.status}</td>"
        f"<td class='num'>{row.attempts}</td><td class='num'>{row.failovers}</td>"
        f"<td class='num'>{row.duration_ms:.0f} ms</td><td class='num'>{_e(row.tokens)}</td>"
        f"<td class='num'>{_e(row.cost)}</td></tr>"
        for row in rows
    )
    return (
        f"<div {_refreshing('requests', '3s')}><table><thead><tr><th>Time (UTC)</th>"
        "<th>Request</th><th>Route</th><th>Served by</th><th class='num'>Status</th>"
        "<th class='num'>Calls</th><th class='num'>Failovers</th><th class='num'>Took</th>"
        "<th class='num'>Tokens in / out</th><th class='num'>Cost</th></tr></thead>"
        f"<tbody>{lines}</tbody></table></div>"
    )


def routing_test_part(result: RoutingTestResult | None, *, error: str | None = None) -> str:
    """The test-routing form's answer."""
    if result is None:
        return f"<div id='test'><p class='error'>{_e(error or 'nothing to test')}</p></div>"
    who = f"key {result.key}" if result.key else "an anonymous caller"
    if result.refusal is not None:
        return (
            f"<div id='test'><p>For {_e(who)}, <code>{_e(result.model)}</code> is refused:</p>"
            f"<p class='error'>{_e(result.refusal)}</p></div>"
        )
    targets = "".join(f"<li>{_e(text)}</li>" for text in result.targets)
    granted = f"<p>Allowed by {_e(result.granted_by)}.</p>" if result.granted_by else ""
    return (
        f"<div id='test'><p>For {_e(who)}, <code>{_e(result.model)}</code> goes to route "
        f"<strong>{_e(result.route)}</strong> (matched by {_e(result.matched_by)}).</p>"
        f"<ol class='targets'>{targets}</ol>{granted}</div>"
    )


def _cell(value: object) -> str:
    return "" if value is None else _e(value)


def record_page(item: RecentRequest, audited: dict[str, Any] | None = None) -> str:
    """One request's routing record: the summary, then each attempt entry; `audited` is the
    record as read back from the store's audit (for a request this process no longer holds)."""
    record: dict[str, Any] = {} if item.record is None else item.record.as_dict()
    if audited is not None:
        record = audited
    attempts: list[dict[str, Any]] = list(record.get("attempts", []))
    columns = ("index", "target", "provider", "model", "outcome", "error_class", "status")
    head = "".join(f"<th>{_e(name.replace('_', ' '))}</th>" for name in columns)
    head += "<th>reason</th><th class='num'>took</th>"
    rows = "".join(
        f"<tr class='{_e(entry.get('outcome', ''))}'>"
        + "".join(f"<td>{_cell(entry.get(name))}</td>" for name in columns)
        + f"<td>{_cell(entry.get('reason'))}</td>"
        + f"<td class='num'>{_cell(entry.get('duration_ms'))}</td></tr>"
        for entry in attempts
    )
    summary = {k: v for k, v in record.items() if k != "attempts"}
    raw = json.dumps(summary, indent=2, default=str)
    return (
        _head(f"turnout · request {item.request_id}")
        + "<body>"
        + _header(f"request {item.request_id}")
        + "<main>"
        + f"<section class='card wide'><h2>{_e(item.path)} → {item.status}</h2>"
        + f"<p>Route {_route_link(item.route)}: {_outcome_line(item, attempts)}</p>"
        + f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></section>"
        + f"<section class='card wide'><h2>Routing record</h2><pre>{_e(raw)}</pre></section>"
        + "</main></body></html>"
    )


def _route_link(route: str | None) -> str:
    """A request's route, linking to the route's page."""
    if not route:
        return "<strong>-</strong>"
    return f"<a href='/ui/routes/{_e(route)}'><strong>{_e(route)}</strong></a>"


def _outcome_line(item: RecentRequest, attempts: list[dict[str, Any]]) -> str:
    """One sentence on how the request ended: who served it and after how many failovers, or,
    when nobody did, how many calls failed and how many targets were passed over."""
    took = f"in {item.duration_ms:.0f} ms"
    if item.provider:
        served = f"served by <strong>{_e(f'{item.provider}:{item.model}')}</strong> {took}"
        if item.failovers:
            served += f", after {item.failovers} failover{'s' if item.failovers != 1 else ''}"
        return served + "."
    calls = sum(1 for entry in attempts if entry.get("outcome") in CALL_OUTCOMES)
    skipped = len(attempts) - calls
    parts = [f"{calls} call{'s' if calls != 1 else ''} made"]
    if skipped:
        parts.append(f"{skipped} target{'s' if skipped != 1 else ''} passed over")
    return f"<strong>no target answered</strong> ({', '.join(parts)}) {took}."


_WINDOW_WORDS = {"hour": "last hour", "day": "last day"}


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _ms(value: int | None) -> str:
    return "-" if value is None else f"{value} ms"


def _traffic_cells(traffic: dict[str, Any] | None) -> str:
    if not traffic:
        traffic = {"calls": 0, "failed": 0}
    return (
        f"<td class='num'>{traffic['calls']}</td>"
        f"<td class='num'>{_share(traffic.get('share'))}</td>"
        f"<td class='num'>{traffic['failed']}</td>"
        f"<td class='num'>{_ms(traffic.get('p50_ms'))} / {_ms(traffic.get('p95_ms'))}</td>"
    )


def _target_row(line: TargetLine, windows: list[str]) -> str:
    marks = " (fallback only)" if line.fallback_only else ""
    marks += " (paused)" if line.paused else ""
    weight = f"{line.weight}" + (f" ({_share(line.configured)})" if line.configured else "")
    cells = "".join(_traffic_cells(dict(line.traffic.get(w) or {})) for w in windows)
    served = "" if line.served_by == line.name else f"<div class='muted'>{_e(line.served_by)}</div>"
    return (
        f"<tr><td><strong>{_e(line.name)}</strong>{_e(marks)}{served}</td>"
        f"<td>{_state(line.state)}</td><td class='num'>{_e(weight)}</td>{cells}</tr>"
    )


def _errors_part(view: RoutePage) -> str:
    day = (view.windows or {}).get("day") or {}
    groups = day.get("errors") or []
    if not groups:
        return "<p class='muted'>No failed request in the last day.</p>"
    rows = "".join(
        f"<tr><td class='num'>{_e(group['status'])}</td><td>{_e(group['code'] or '-')}</td>"
        f"<td>{_e(group['message'] or '-')}</td><td class='num'>{group['count']}</td>"
        f"<td><a href='/ui/requests/{_e(group['sample'])}'>{_e(group['sample'])}</a></td></tr>"
        for group in groups
    )
    return (
        "<table><thead><tr><th class='num'>Status</th><th>Code</th><th>Message</th>"
        f"<th class='num'>Requests</th><th>Latest</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def route_page(view: RoutePage) -> str:
    """One route's page: its targets with weights, health here and traffic per window, its
    failed requests grouped by message, who may use it, and its policy."""
    windows = list(view.windows or {})
    spans = "".join(
        f"<th colspan='4' class='window'>{_e(_WINDOW_WORDS.get(w, w))}</th>" for w in windows
    )
    columns = "".join(
        "<th class='num'>Calls</th><th class='num'>Share</th><th class='num'>Failed</th>"
        "<th class='num'>p50 / p95</th>"
        for _ in windows
    )
    totals = " · ".join(
        f"{_WINDOW_WORDS.get(w, w)}: {stats['requests']} requests, {stats['answered']} answered"
        + (f" (targets: the latest {stats['sample_size']:,})" if stats.get("sampled") else "")
        for w, stats in (view.windows or {}).items()
    )
    if view.windows is None:
        where = "This gateway has no store: only this replica's health is shown."
    elif view.unread:
        where = f"The request audit cannot be read now ({view.unread})."
    else:
        where = (
            "Traffic and errors are the whole fleet's (from the request audit); health is this "
            "replica's."
        )
    targets = "".join(_target_row(line, windows) for line in view.targets)
    policy = "".join(f"<dt>{_e(name)}</dt><dd>{_e(value)}</dd>" for name, value in view.policy)
    grants = "".join(f"<li>{_e(name)}</li>" for name in view.granted_by) or "<li>nobody</li>"
    return (
        _head(f"turnout · route {view.name}")
        + "<body>"
        + _header(f"project {view.project} · route {view.name}")
        + "<main>"
        + f"<section class='card wide'><h2>Route {_e(view.name)}</h2>"
        + f"<p>{_e(view.kind)} · {_e(view.strategy)} · serves {_e(', '.join(view.serves) or '-')}"
        + (f" · then {_e(view.fallbacks)}" if view.fallbacks else "")
        + f"</p><p class='muted' id='where'>{_e(where)}</p>"
        + (f"<p id='totals'>{_e(totals)}</p>" if totals else "")
        + "<div class='scroll'><table id='targets'><thead>"
        + "<tr><th rowspan='2'>Target</th><th rowspan='2'>Health here</th>"
        + f"<th rowspan='2' class='num'>Weight (share)</th>{spans}</tr><tr>{columns}</tr>"
        + f"</thead><tbody>{targets}</tbody></table></div></section>"
        + "<section class='card wide'><h2>Failed requests, last day</h2>"
        + f"<div class='scroll' id='errors'>{_errors_part(view)}</div></section>"
        + f"<section class='card'><h2>Who may use it</h2><ul id='grants'>{grants}</ul></section>"
        + f"<section class='card'><h2>Policy</h2><dl class='policy'>{policy}</dl></section>"
        + "</main></body></html>"
    )


def _select(name: str, label: str, choices: Sequence[str], chosen: str | None) -> str:
    options = "".join(
        f"<option value='{_e(value)}'{' selected' if value == chosen else ''}>{_e(value)}</option>"
        for value in choices
    )
    return (
        f"<label>{_e(label)} <select name='{name}'><option value=''>any</option>{options}"
        "</select></label>"
    )


def requests_page(
    rows: Sequence[Listed],
    query: RequestQuery,
    *,
    routes: Sequence[str],
    keys: Sequence[str],
    older: str | None,
    where: str,
) -> str:
    """The request list: a plain GET form of filters, the matching requests newest first, each
    linking to its record, and a link to the older page."""
    wanted = query.wanted
    windows = {"1h": "last hour", "24h": "last day", "7d": "last 7 days"}
    window_options = "".join(
        f"<option value='{value}'{' selected' if value == query.window else ''}>{words}</option>"
        for value, words in windows.items()
    )
    form = (
        "<form method='get' action='/ui/requests' id='filters'>"
        + _select("route", "Route", routes, wanted.route)
        + f"<label>Key <input name='key' list='key-names' value='{_e(wanted.key or '')}'>"
        + "<datalist id='key-names'>"
        + "".join(f"<option value='{_e(name)}'>" for name in keys)
        + "</datalist></label>"
        + _select("status", "Status", ["2xx", "4xx", "5xx"], wanted.status)
        + _select("outcome", "Outcome", ["answered", "failed", "refused", "cached"], wanted.outcome)
        + "<label>Time <select name='window'><option value=''>all</option>"
        + f"{window_options}</select></label>"
        + f"<label>Request id <input name='id' value='{_e(wanted.request_id or '')}'></label>"
        + "<button type='submit'>Find</button> <a href='/ui/requests'>Clear</a></form>"
    )
    if rows:
        lines = "".join(
            f"<tr class='{'bad' if row.status >= 400 else ''}'><td>{_e(row.time)}</td>"
            f"<td><a href='/ui/requests/{_e(row.request_id)}'>{_e(row.request_id)}</a></td>"
            f"<td>{_e(row.key)}</td><td>{_e(row.model)}</td><td>{_e(row.route)}</td>"
            f"<td class='num'>{row.status}</td><td>{_e(row.served)}</td><td>{_e(row.outcome)}</td>"
            f"<td class='num'>{row.took_ms:.0f} ms</td><td class='num'>{_e(row.tokens)}</td>"
            f"<td class='num'>{_e(row.cost)}</td></tr>"
            for row in rows
        )
        table = (
            "<div class='scroll'><table id='found'><thead><tr><th>Time (UTC)</th><th>Request</th>"
            "<th>Key</th><th>Model</th><th>Route</th><th class='num'>Status</th>"
            "<th>Served by</th><th>Outcome</th><th class='num'>Took</th>"
            "<th class='num'>Tokens in / out</th><th class='num'>Cost</th></tr></thead>"
            f"<tbody>{lines}</tbody></table></div>"
        )
    else:
        table = "<p class='muted' id='found'>No request matches.</p>"
    more = f"<p><a id='older' href='{_e(older)}'>Older requests</a></p>" if older else ""
    return (
        _head("turnout · requests")
        + "<body>"
        + _header("requests")
        + "<main>"
        + "<section class='card wide'><h2>Requests</h2>"
        + f"<p class='muted' id='where'>{_e(where)}</p>{form}{table}{more}</section>"
        + "</main></body></html>"
    )


def test_page(part: str) -> str:
    """The test-routing form's answer as a page of its own, for a browser without
    JavaScript (with it, the answer replaces the form's result in place)."""
    return (
        _head("turnout · test routing")
        + "<body>"
        + _header("test routing")
        + "<main><section class='card wide'><h2>Test routing</h2>"
        + f"{part}<p><a href='/ui'>Back to the dashboard</a></p></section></main></body></html>"
    )


_TOP_KEYS = 20


def _spend_rows(rows: Sequence[dict[str, Any]], names: Sequence[str]) -> str:
    lines = []
    for row in rows:
        cost = "-" if row.get("cost") is None else f"${row['cost']:.4f}"
        unpriced = f" ({row['unpriced_requests']} unpriced)" if row.get("unpriced_requests") else ""
        named = "".join(f"<td>{_e(row.get(name) or '-')}</td>" for name in names)
        lines.append(
            f"<tr>{named}<td class='num'>{row['requests']}</td>"
            f"<td class='num'>{row['input_tokens']} / {row['output_tokens']}</td>"
            f"<td class='num'>{_e(cost)}{_e(unpriced)}</td></tr>"
        )
    return "".join(lines)


def spend_part(spend: Mapping[str, Sequence[dict[str, Any]]] | None, *, unread: str = "") -> str:
    """Spend per project and per key (the most expensive keys first) from the usage ledger;
    `unread`: why the ledger could not be read."""
    if spend is None:
        return f"<p class='muted'>The usage ledger cannot be read now ({_e(unread)}).</p>"
    projects = spend.get("projects") or []
    if not projects:
        return "<p class='muted'>No usage in the last 30 days.</p>"
    keys = sorted(spend.get("keys") or [], key=lambda row: -(row.get("cost") or 0.0))
    head = (
        "<th class='num'>Requests</th><th class='num'>Tokens in / out</th>"
        "<th class='num'>Cost</th></tr></thead>"
    )
    return (
        "<p class='muted'>Every replica's, from the usage ledger.</p><div class='scroll'>"
        f"<table id='spend-projects'><thead><tr><th>Project</th>{head}"
        f"<tbody>{_spend_rows(projects, ['project'])}</tbody></table>"
        f"<table id='spend-keys'><thead><tr><th>Project</th><th>Key</th>{head}"
        f"<tbody>{_spend_rows(keys[:_TOP_KEYS], ['project', 'key_name'])}</tbody></table></div>"
    )


def spend_loading(shown: str | None) -> str:
    """The spend card's body before its figures are read: the part loads itself; without
    JavaScript, a link to them."""
    scope = f"?project={_e(shown)}" if shown else ""
    return (
        f"<div hx-get='/ui/part/spend{scope}' hx-trigger='load' hx-swap='outerHTML'>"
        f"<p class='muted'><a href='/ui/spend{scope}'>Show spend</a> (read from the usage "
        "ledger)</p></div>"
    )


def spend_page(part: str) -> str:
    """The spend card as a page of its own (a browser without JavaScript)."""
    return (
        _head("turnout · spend")
        + "<body>"
        + _header("spend")
        + "<main><section class='card wide' id='spend'><h2>Spend, last 30 days</h2>"
        + f"{part}<p><a href='/ui'>Back to the dashboard</a></p></section></main></body></html>"
    )
