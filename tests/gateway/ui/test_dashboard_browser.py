"""The dashboard in a real browser (Debian's chromium, driven by Playwright): sign in, see the
breaker a failing upstream opened, run the test-routing form, read a route's page with and
without JavaScript, and keep a screenshot."""

from __future__ import annotations

import functools
import shutil
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
from playwright.async_api import async_playwright

from turnout.access.keys import hash_key
from turnout.gateway.server.app import GatewayApp
from turnout.gateway.server.audit import _audited, _search, _traffic
from turnout.gateway.server.limits import ServerLimits
from turnout.gateway.server.listener import bind_socket, serving

from .._app_support import chat, runtime_of
from .test_dashboard_http import ADMIN, CONFIG
from .test_route_page import WEIGHTED, _audit, _refused, _served
from .test_route_page import _app as _route_app

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from playwright.async_api import Page

    from turnout.store import Store

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists(), reason="needs Debian's chromium package (apt install chromium)"
)


async def _sign_in(page: Page, base: str) -> None:
    await page.goto(f"{base}/ui")
    assert page.url.endswith("/ui/login")
    await page.fill("#key", ADMIN)
    await page.click("button[type=submit]")
    await page.wait_for_selector("text=Upstream health")


@asynccontextmanager
async def _signed_in_page(
    app: GatewayApp, *, width: int, script: bool, errors: list[str] | None = None
) -> AsyncIterator[Page]:
    """A chromium page `width` px wide (JavaScript on or off), signed in to `app` served on a
    socket of its own; the page's script errors, from the first page on, go to `errors`."""
    with bind_socket("127.0.0.1", 0) as sock:
        base = f"http://127.0.0.1:{sock.getsockname()[1]}"
        async with (
            serving(app, sock, ServerLimits(shutdown_grace=0.0)),
            async_playwright() as playwright,
        ):
            browser = await playwright.chromium.launch(executable_path=CHROMIUM)
            context = await browser.new_context(
                viewport={"width": width, "height": 900}, java_script_enabled=script
            )
            page = await context.new_page()
            if errors is not None:
                page.on("pageerror", lambda error: errors.append(str(error)))
            await _sign_in(page, base)
            try:
                yield page
            finally:
                await browser.close()


@pytest.mark.parametrize("width", [1280, 390])
async def test_the_dashboard_shows_an_open_breaker_and_tests_routing(
    tmp_path: Path, width: int
) -> None:
    """Signed in, the page shows the open breaker, the failover chart and the request; the
    form answers with the route; at laptop and phone widths nothing overflows the page."""
    app = GatewayApp(runtime_of(CONFIG), admin_hashes=lambda: frozenset({hash_key(ADMIN)}))
    with bind_socket("127.0.0.1", 0) as sock:
        base = f"http://127.0.0.1:{sock.getsockname()[1]}"
        async with serving(app, sock, ServerLimits(shutdown_grace=0.0)):
            async with httpx.AsyncClient(base_url=base) as client:
                served = await client.post("/v1/chat/completions", json=chat("gpt-4o"))
                assert served.status_code == 200
            async with async_playwright() as playwright:
                browser = await playwright.chromium.launch(executable_path=CHROMIUM)
                page = await browser.new_page(viewport={"width": width, "height": 900})
                errors: list[str] = []
                page.on("pageerror", lambda error: errors.append(str(error)))
                await _sign_in(page, base)
                assert await page.locator("#health .state.open").count() == 1
                assert await page.locator("#requests tbody tr").count() == 1
                await page.wait_for_selector("#failover-chart canvas")
                await page.fill("input[name=model]", "gpt-4o")
                await page.click("#test-form button")
                await page.wait_for_selector("#test strong")
                assert await page.locator("#test strong").inner_text() == "main"
                overflow = await page.evaluate(
                    "document.documentElement.scrollWidth - window.innerWidth"
                )
                await page.screenshot(path=str(tmp_path / f"dashboard-{width}.png"), full_page=True)
                await browser.close()
    assert errors == []
    assert overflow <= 0
    assert (tmp_path / f"dashboard-{width}.png").stat().st_size > 10_000


async def test_signing_out_in_the_browser_ends_the_session(tmp_path: Path) -> None:
    """Signed in through the form, the browser holds only an HttpOnly session cookie (never
    the key); Sign out returns to the form, and the old cookie no longer opens the page."""
    app = GatewayApp(runtime_of(CONFIG), admin_hashes=lambda: frozenset({hash_key(ADMIN)}))
    with bind_socket("127.0.0.1", 0) as sock:
        base = f"http://127.0.0.1:{sock.getsockname()[1]}"
        async with serving(app, sock, ServerLimits(shutdown_grace=0.0)):
            async with async_playwright() as playwright:
                browser = await playwright.chromium.launch(executable_path=CHROMIUM)
                context = await browser.new_context()
                page = await context.new_page()
                await _sign_in(page, base)
                [cookie] = await context.cookies()
                await page.screenshot(path=str(tmp_path / "signed-in.png"))
                await page.click("text=Sign out")
                await page.wait_for_selector("#key")
                await page.screenshot(path=str(tmp_path / "signed-out.png"))
                await browser.close()
            header = {"cookie": f"{cookie['name']}={cookie['value']}"}
            async with httpx.AsyncClient(base_url=base) as client:
                again = await client.get("/ui", headers=header)
    assert (cookie["name"], cookie["httpOnly"], cookie["sameSite"]) == (
        "turnout_session",
        True,
        "Lax",
    )
    assert ADMIN not in cookie["value"]
    assert (again.status_code, again.headers["location"]) == (303, "/ui/login")
    assert (tmp_path / "signed-out.png").stat().st_size > 1_000


@pytest.mark.parametrize(("width", "script"), [(1400, True), (400, True), (400, False)])
async def test_the_route_page_in_a_browser(
    store: Store, tmp_path: Path, width: int, script: bool
) -> None:
    """In chromium, with and without JavaScript, at 1400 and 400 px: the route page shows
    both targets with their traffic and the failed requests, and nothing overflows the
    window (wide tables scroll inside their card)."""
    app = _route_app(WEIGHTED)
    assert app.dashboard is not None
    app.dashboard.traffic = functools.partial(_traffic, store)
    served = [_served(f"e{n}", "east:gpt-4o", 10 + n) for n in range(6)]
    served += [_served(f"w{n}", "west:gpt-4o", 40 + n) for n in range(3)]
    await _audit(store, tmp_path, [*served, _refused("f1", "every target failed: 429")])
    shot = tmp_path / f"route-{width}-{'js' if script else 'nojs'}.png"
    errors: list[str] = []
    async with _signed_in_page(app, width=width, script=script, errors=errors) as page:
        await page.click("text=split")
        await page.wait_for_selector("#targets")
        rows = await page.locator("#targets tbody tr").all_inner_texts()
        failed = await page.locator("#errors tbody tr").all_inner_texts()
        overflow = await page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        await page.screenshot(path=str(shot), full_page=True)
    assert errors == []
    assert [row.split()[0] for row in rows] == ["east:gpt-4o", "west:gpt-4o"]
    assert "67%" in rows[0]
    assert "75%" in rows[0]  # the configured share, beside the actual one
    assert len(failed) == 1
    assert "every target failed: 429" in failed[0]
    assert overflow <= 0
    assert shot.stat().st_size > 10_000


async def test_the_request_list_filters_without_javascript(store: Store, tmp_path: Path) -> None:
    """Without JavaScript at 400 px: the dashboard's link opens the request list, choosing a
    status and pressing Find lists only the failed requests, a request links to its record, and
    nothing overflows the window."""
    from .test_request_list import _listed

    app = _route_app(WEIGHTED)
    assert app.dashboard is not None
    app.dashboard.search = functools.partial(_search, store)
    app.dashboard.audit = functools.partial(_audited, store)
    await _listed(store, tmp_path, 12)
    shot = tmp_path / "requests-400-nojs.png"
    async with _signed_in_page(app, width=400, script=False) as page:
        await page.click("text=find requests")
        await page.select_option("select[name=status]", "5xx")
        await page.click("#filters button")
        await page.wait_for_selector("#found")
        statuses = await page.locator("#found tbody tr td:nth-child(6)").all_inner_texts()
        overflow = await page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        await page.screenshot(path=str(shot), full_page=True)
        await page.click("#found tbody tr:first-child a")
        await page.wait_for_selector("text=Routing record")
    assert statuses == ["503", "503", "503"]
    assert overflow <= 0
    assert shot.stat().st_size > 10_000


async def test_the_dashboard_without_javascript(tmp_path: Path) -> None:
    """Without JavaScript: the tables are there, the test-routing form answers on a page of
    its own, and the page names the replica serving it."""
    app = GatewayApp(runtime_of(CONFIG), admin_hashes=lambda: frozenset({hash_key(ADMIN)}))
    async with _signed_in_page(app, width=1400, script=False) as page:
        routes = await page.locator("#routes tbody tr").count()
        replica = await page.locator("header .replica").inner_text()
        await page.screenshot(path=str(tmp_path / "dashboard-nojs.png"), full_page=True)
        await page.fill("input[name=model]", "gpt-4o")
        await page.click("#test-form button")
        await page.wait_for_selector("text=Back to the dashboard")
        answer = await page.locator("strong").first.inner_text()
    assert routes == 1
    assert replica.startswith("replica ")
    assert answer == "main"
