"""`/ui`: the operator's dashboard, an ASGI app the gateway mounts beside its API.

Rule 1: every page, part and data URL but the sign-in form and the assets needs a session or an
admin key (`session`); a page without one redirects to the form, a part or data URL answers 401
(and tells htmx to go to the form). Signing out ends the session server-side.
Rule 6: a wrong admin key (in the form, or sent by a script) is a failed sign-in, logged and
counted per peer address; a peer with too many gets 429 with `Retry-After`, its key unchecked
(`turnout.access.sign_ins`); the form sent without a key is logged once per burst per peer
(`turnout.gateway.observe.sign_in_log`).
Rule 2: the assets are a fixed set of files shipped in the package, served by name only (no path
is ever joined from a request).
Rule 3: pages are never cached and never framed; a strict content security policy allows
scripts from this server only.
Rule 4: the dashboard only reads: the test-routing form resolves a model, it calls nothing.
Rule 5: a request page (`/ui/requests/{id}`) shows the request from this process's memory, else,
when the gateway has a store (`audit`), from the store's request audit (a request pushed out of
memory, or served by another worker or replica); a store that fails is a 404 saying so.
Rule 7: a route page (`/ui/routes/{id}`, or the route's name) shows its targets and this
process's health of them, and, when the gateway has a store, the route's traffic and failed
requests from the audit (every replica's); a store that fails leaves the page up, saying so.
Rule 8: the request list (`/ui/requests`) filters by a plain GET form, pages by the audit's
row numbers, and lists this process's memory when there is no store.
Rule 9: the dashboard and its parts show one project when `?project=` names one this replica
serves (a form on the page chooses it), else every project; every page names the replica and
process serving it. The test-routing form works without JavaScript too (`POST /ui/test`
answers a page of its own).
Rule 10: with a store, the dashboard shows spend per project and per key over the last 30
days from the usage ledger (every replica's), read at most once a minute: the page shows the
last figures read, or loads them as a part of their own (`/ui/part/spend`; `/ui/spend` without
JavaScript), so a large ledger never slows the page; a store that fails leaves the card saying
so.
"""

from __future__ import annotations

import html
import json
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qs

from turnout.access.sign_ins import SignInThrottle, peer_of, refused_sign_in
from turnout.gateway.observe.sign_in_log import KeylessSignIns
from turnout.gateway.ui import pages, request_search, route_view, views
from turnout.gateway.ui.session import (
    SESSION_SECONDS,
    MemorySessions,
    SessionBook,
    admin_hash,
    clear_cookies,
    is_loopback,
    new_session_id,
    presented_key,
    presented_session,
    session_cookie,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping, MutableMapping

    from turnout.gateway.observe.activity import Activity
    from turnout.gateway.runtime.live import Runtime
    from turnout.store.audit_search import RequestFilter

    Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
    Traffic = Callable[[str, str], Awaitable[Mapping[str, Mapping[str, Any]]]]
    Search = Callable[[RequestFilter, int | None, int], Awaitable[Mapping[str, Any]]]
    """A page of the audit's requests: the filter, `before` and the page's size."""
    """A route's traffic per window (`route_view.WINDOWS`), by project and route name."""
    Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]

__all__ = ["Dashboard"]

_ASSETS: Final = Path(__file__).parent / "assets"
_TYPES: Final = {
    ".js": b"text/javascript; charset=utf-8",
    ".css": b"text/css; charset=utf-8",
    ".txt": b"text/plain; charset=utf-8",
}
_HTML: Final = (b"content-type", b"text/html; charset=utf-8")
_PAGE_HEADERS: Final = [
    (b"cache-control", b"no-store"),
    (
        b"content-security-policy",
        (
            b"default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
            b"frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
        ),
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]
_MAX_FORM: Final = 16 * 1024
_PAGE: Final = 50
"""Requests per page of the request list."""
_PARTS: Final = ("health", "routes", "requests", "spend")
_SPEND_SECONDS: Final = 60.0
"""How long the spend read from the ledger is shown before it is read again (Rule 10)."""
logger = logging.getLogger("turnout.ui")


class Dashboard:
    """The `/ui` app over the live runtimes (`runtimes()`: project name to runtime), the admin
    key hashes (`admin_hashes()`) and this process's `activity`. `sessions` (default: in this
    process's memory; the store's when the gateway has one) keeps the signed-in browsers;
    `sign_ins` (default: a new `SignInThrottle`) counts failed sign-ins."""

    def __init__(
        self,
        *,
        runtimes: Callable[[], Mapping[str, Runtime]],
        admin_hashes: Callable[[], frozenset[str]],
        activity: Activity,
        sign_ins: SignInThrottle | None = None,
    ) -> None:
        self._runtimes = runtimes
        self._admin_hashes = admin_hashes
        self.activity = activity
        self.sessions: SessionBook = MemorySessions()
        self.sign_ins = sign_ins if sign_ins is not None else SignInThrottle()
        self.keyless = KeylessSignIns()
        """Sign-ins without any key, logged once per burst per peer."""
        self.audit: Callable[[str], Awaitable[Mapping[str, Any] | None]] | None = None
        """Rule 5: reads one request from the store's audit (None: no store)."""
        self.search: Search | None = None
        """Rule 8: finds requests in the store's audit (None: no store)."""
        self.spend: Callable[[], Awaitable[Mapping[str, Any]]] | None = None
        """Rule 10: spend per project and key from the usage ledger (None: no store)."""
        self._spent: tuple[float, Mapping[str, Any]] | None = None
        """Rule 10: when the spend was last read, and what it was."""
        self.traffic: Traffic | None = None
        """Rule 7: reads a route's traffic from the store's audit (None: no store)."""
        self._assets: dict[str, tuple[bytes, bytes]] = {}

    async def __call__(self, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        path: str = scope["path"].rstrip("/") or "/"
        method: str = "GET" if scope["method"] == "HEAD" else scope["method"]
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        if path.startswith("/ui/assets/") and method == "GET":
            await self._asset(send, path.removeprefix("/ui/assets/"))
            return
        if path == "/ui/login":
            await self._login(scope, receive, send, method, headers)
            return
        if path == "/ui/logout" and method == "POST":
            await self._logout(scope, send, headers)
            return
        wait = self._throttled(scope, headers)
        if wait is not None:
            await _too_many(send, wait)
            return
        if not await self._is_signed_in(scope, headers):
            await self._unauthorized(send, path)
            return
        await self._signed_in(scope, receive, send, path, method)

    def _throttled(self, scope: MutableMapping[str, Any], headers: Mapping[str, str]) -> int | None:
        """Rule 6: seconds until a throttled peer that sends a key may try again."""
        if presented_key(headers) is None:
            return None
        return self.sign_ins.retry_after(peer_of(scope))

    async def _is_signed_in(
        self, scope: MutableMapping[str, Any], headers: Mapping[str, str]
    ) -> bool:
        """Rule 1: an admin key sent with the request, else a live session of one."""
        hashes = self._admin_hashes()
        key = presented_key(headers)
        if key is not None:
            if admin_hash(key, hashes) is not None:
                return True
            refused_sign_in(self.sign_ins, peer_of(scope), key, "dashboard")
            return False
        session_id = presented_session(headers)
        if session_id is None:
            return False
        try:
            key_hash = await self.sessions.key_of(session_id)
        except Exception:  # the store: the browser signs in again once it answers
            logger.warning("dashboard: the sessions cannot be read now", exc_info=True)
            return False
        return key_hash is not None and key_hash in hashes

    async def _logout(
        self, scope: MutableMapping[str, Any], send: Send, headers: Mapping[str, str]
    ) -> None:
        """Rule 1: end the session everywhere, then clear the browser's cookie."""
        session_id = presented_session(headers)
        if session_id is not None:
            await self.sessions.close(session_id)
        cookies = clear_cookies(secure=_is_secure(scope, headers))
        await _redirect(send, "/ui/login", [(b"set-cookie", value) for value in cookies])

    async def _signed_in(
        self, scope: MutableMapping[str, Any], receive: Receive, send: Send, path: str, method: str
    ) -> None:
        runtimes = self._runtimes()
        shown = _shown_project(scope, runtimes)
        scoped = runtimes if shown is None else {shown: runtimes[shown]}
        if path == "/ui" and method == "GET":
            body = pages.page(
                projects=list(runtimes),
                health=views.health_rows(scoped),
                routes=views.route_views(scoped),
                requests=views.request_rows(self.activity),
                key_names=[k.name for r in scoped.values() for k in r.config.keys],
                shown=shown,
                spend=self._spend_now(shown),
            )
            await _html(send, 200, body)
        elif path.startswith("/ui/part/") and path.removeprefix("/ui/part/") in _PARTS:
            body = await self._part(path.removeprefix("/ui/part/"), scoped, shown)
            await _html(send, 200, body)
        elif path == "/ui/spend" and method == "GET":  # the card's figures, without JavaScript
            await _html(send, 200, pages.spend_page(await self._spend_part(shown)))
        elif path == "/ui/part/test" and method == "POST":
            form = await _form(receive)
            await _html(send, 200, self._test(runtimes, form))
        elif path == "/ui/test" and method == "POST":  # the form, sent without JavaScript
            form = await _form(receive)
            await _html(send, 200, pages.test_page(self._test(runtimes, form)))
        elif path == "/ui/data.json" and method == "GET":
            data = json.dumps(views.chart_data(self.activity)).encode()
            await _send(send, 200, data, [(b"content-type", b"application/json")])
        elif path == "/ui/requests" and method == "GET":
            await self._requests(scope, send, runtimes)
        elif path.startswith("/ui/requests/") and method == "GET":
            await self._request(send, path.removeprefix("/ui/requests/"))
        elif path.startswith("/ui/routes/") and method == "GET":
            await self._route(send, runtimes, path.removeprefix("/ui/routes/"))
        else:
            await _html(send, 404, _not_found(f"No dashboard page at {path}."))

    async def _request(self, send: Send, request_id: str) -> None:
        """Rule 5: one request's page, from memory or from the audit."""
        item = self.activity.get(request_id)
        if item is not None:
            await _html(send, 200, pages.record_page(item))
            return
        if self.audit is None:
            await _html(send, 404, _not_found("This request is not in this process's memory."))
            return
        try:
            found = await self.audit(request_id)
        except Exception:  # noqa: BLE001 - the store: the page says so
            await _html(send, 404, _not_found("The request audit cannot be read now."))
            return
        if found is None:
            await _html(send, 404, _not_found("This request is not in memory nor in the audit."))
            return
        audited, record = views.audited_request(found)
        await _html(send, 200, pages.record_page(audited, record))

    async def _part(self, part: str, scoped: Mapping[str, Runtime], shown: str | None) -> str:
        """One refreshing part of the dashboard, kept to the project `shown`."""
        if part == "health":
            return pages.health_part(views.health_rows(scoped), shown)
        if part == "routes":
            return pages.routes_part(views.route_views(scoped), shown)
        if part == "spend":
            return await self._spend_part(shown)
        return pages.requests_part(views.request_rows(self.activity))

    def _spend_now(self, shown: str | None) -> str:
        """Rule 10: the spend card's body for the page: the figures when read in the last
        `_SPEND_SECONDS`, else the part that loads them (empty without a store)."""
        if self.spend is None:
            return ""
        if self._spent is not None and time.monotonic() - self._spent[0] < _SPEND_SECONDS:
            return pages.spend_part(_of_project(self._spent[1], shown))
        return pages.spend_loading(shown)

    async def _spend_part(self, shown: str | None) -> str:
        """Rule 10: the spend card's body, read from the ledger when the figures are older
        than `_SPEND_SECONDS`."""
        if self.spend is None:
            return "<p class='muted'>This gateway has no store: no usage ledger.</p>"
        if self._spent is None or time.monotonic() - self._spent[0] >= _SPEND_SECONDS:
            try:
                self._spent = (time.monotonic(), await self.spend())
            except Exception as exc:  # noqa: BLE001 - the store: the card says so
                return pages.spend_part(None, unread=type(exc).__name__)
        return pages.spend_part(_of_project(self._spent[1], shown))

    async def _requests(
        self, scope: MutableMapping[str, Any], send: Send, runtimes: Mapping[str, Runtime]
    ) -> None:
        """Rule 8: the request list, from the audit, else from this process's memory."""
        query = request_search.parse_query(scope.get("query_string", b"").decode("latin-1"),
                                           now=time.time())  # fmt: skip
        older = None
        if self.search is None:
            rows = request_search.from_memory(self.activity.recent(500), query, _PAGE)
            where = "This process's recent requests (no store); the key filter needs a store."
        else:
            try:
                found = await self.search(query.wanted, query.before, _PAGE)
            except Exception as exc:  # noqa: BLE001 - the store: the page says so
                rows, where = [], f"The request audit cannot be read now ({type(exc).__name__})."
            else:
                rows = request_search.listed_rows(found["rows"])
                where = "Every replica's requests, from the request audit."
                if found["next"] is not None:
                    older = query.link(before=found["next"])
        routes = sorted({name for runtime in runtimes.values() for name in runtime.routes})
        keys = sorted({k.name for runtime in runtimes.values() for k in runtime.config.keys})
        body = pages.requests_page(rows, query, routes=routes, keys=keys, older=older, where=where)
        await _html(send, 200, body)

    async def _route(self, send: Send, runtimes: Mapping[str, Runtime], wanted: str) -> None:
        """Rule 7: one route's page, its traffic from the audit when there is a store."""
        found = route_view.find_route(runtimes, wanted)
        if found is None:
            await _html(send, 404, _not_found(f"No route {wanted!r} in the projects served here."))
            return
        project, runtime, entry = found
        windows: Mapping[str, Mapping[str, Any]] | None = None
        unread = None
        if self.traffic is not None:
            try:
                windows = await self.traffic(project, entry.name)
            except Exception as exc:  # noqa: BLE001 - the store: the page says so
                windows, unread = {}, type(exc).__name__
        view = route_view.route_page(project, runtime, entry, windows, unread=unread)
        await _html(send, 200, pages.route_page(view))

    def _test(self, runtimes: Mapping[str, Runtime], form: Mapping[str, str] | None) -> str:
        """Rule 4: resolve the form's model for its key, in the first project that knows it."""
        if form is None or not form.get("model", "").strip():
            return pages.routing_test_part(None, error="give a model to test")
        model, key = form["model"].strip(), form.get("key", "").strip() or None
        result = None
        for runtime in runtimes.values():
            if key is None or any(k.name == key for k in runtime.config.keys):
                result = views.routing_test(runtime, model, key)
                break
        if result is None:
            return pages.routing_test_part(None, error=f"no key named {key!r}")
        return pages.routing_test_part(result)

    async def _login(
        self,
        scope: MutableMapping[str, Any],
        receive: Receive,
        send: Send,
        method: str,
        headers: Mapping[str, str],
    ) -> None:
        if method == "GET":
            await _html(send, 200, pages.login_page())
            return
        if method != "POST":
            await _html(send, 405, _not_found("Sign in with the form."))
            return
        peer = peer_of(scope)
        wait = self.sign_ins.retry_after(peer)
        if wait is not None:
            await _too_many(send, wait)
            return
        form = await _form(receive)
        key = (form or {}).get("key", "").strip()
        key_hash = admin_hash(key, self._admin_hashes()) if key else None
        if key_hash is None:
            if key:
                refused_sign_in(self.sign_ins, peer, key, "dashboard")
            else:
                self.keyless.refused("dashboard", peer)
            await _html(send, 401, pages.login_page(error="That is not an admin key."))
            return
        session_id = new_session_id()
        try:
            await self.sessions.open(session_id, key_hash, SESSION_SECONDS)
        except Exception:  # the store: signing in waits until it answers
            logger.warning("dashboard: a session cannot be stored now", exc_info=True)
            error = "The store cannot be reached: try again once it answers."
            await _html(send, 503, pages.login_page(error=error))
            return
        cookies = session_cookie(session_id, secure=_is_secure(scope, headers))
        await _redirect(send, "/ui", [(b"set-cookie", value) for value in cookies])

    async def _unauthorized(self, send: Send, path: str) -> None:
        """Rule 1: a page (the dashboard, a request's, a route's) sends to the form."""
        if path == "/ui" or path.startswith(("/ui/requests/", "/ui/routes/")):
            await _redirect(send, "/ui/login", [])
            return
        await _send(
            send,
            401,
            b'{"error": {"code": "invalid_admin_key", "message": "sign in with an admin key"}}',
            [(b"content-type", b"application/json"), (b"hx-redirect", b"/ui/login")],
        )

    async def _asset(self, send: Send, name: str) -> None:
        """Rule 2."""
        found = self._assets.get(name)
        if found is None:
            files = {path.name: path for path in _ASSETS.iterdir() if path.is_file()}
            path = files.get(name)
            if path is None or path.suffix not in _TYPES:
                await _send(send, 404, b"not found", [(b"content-type", b"text/plain")])
                return
            found = self._assets[name] = (path.read_bytes(), _TYPES[path.suffix])
        body, kind = found
        cache = (b"cache-control", b"public, max-age=3600")
        await _send(send, 200, body, [(b"content-type", kind), cache, *_PAGE_HEADERS[2:]])


def _of_project(spend: Mapping[str, Any], shown: str | None) -> Mapping[str, Any]:
    """`spend` kept to the project `shown` (every project when None)."""
    if shown is None:
        return spend
    return {
        part: [row for row in rows if row.get("project") == shown] for part, rows in spend.items()
    }


def _shown_project(scope: MutableMapping[str, Any], runtimes: Mapping[str, Any]) -> str | None:
    """The project the query string's `project` names, when this replica serves it; else
    None (every project)."""
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    wanted = (query.get("project") or [""])[0]
    return wanted if wanted in runtimes else None


def _is_secure(scope: MutableMapping[str, Any], headers: Mapping[str, str]) -> bool:
    """Rule 1: whether the cookie is `Secure`: always over HTTPS, and over plain HTTP unless the
    browser reached a loopback address."""
    https = scope.get("scheme") == "https" or headers.get("x-forwarded-proto") == "https"
    return https or not is_loopback(headers.get("host", ""))


async def _too_many(send: Send, wait: int) -> None:
    """Rule 6: the answer to a throttled peer."""
    body = pages.login_page(error=f"Too many failed sign-ins. Try again in {wait} s.")
    headers = [_HTML, *_PAGE_HEADERS, (b"retry-after", str(wait).encode())]
    await _send(send, 429, body.encode(), headers)


def _not_found(text: str) -> str:
    return f"<!doctype html><title>turnout</title><p>{html.escape(text)} <a href='/ui'>Back</a></p>"


async def _form(receive: Receive) -> dict[str, str] | None:
    """A small url-encoded form body (None when it is too large or the caller left)."""
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > _MAX_FORM:
            return None
        parts.append(chunk)
        if not message.get("more_body", False):
            break
    fields = parse_qs(b"".join(parts).decode("utf-8", "replace"), keep_blank_values=True)
    return {name: values[0] for name, values in fields.items()}


async def _html(send: Send, status: int, body: str) -> None:
    await _send(send, status, body.encode(), [_HTML, *_PAGE_HEADERS])


async def _redirect(send: Send, location: str, headers: list[tuple[bytes, bytes]]) -> None:
    await _send(send, 303, b"", [(b"location", location.encode()), *headers, *_PAGE_HEADERS])


async def _send(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})
