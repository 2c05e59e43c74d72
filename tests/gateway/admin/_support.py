"""A real gateway with the admin API for the admin suites: a test `AdminContext` over a store
and a fixed config file, which rebuilds every project's runtime from a fresh snapshot after each
write and swaps the file project's runtime into the app, served by the gateway's own HTTP server
on a free 127.0.0.1 port (in the test's event loop, or in a thread of its own for sync
clients)."""

from __future__ import annotations

import asyncio
import threading
import uuid
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any

from turnout.config.load import parse_config
from turnout.config.stored import project_config
from turnout.errors import ConfigError
from turnout.gateway.resolution.lookups import build_runtime
from turnout.gateway.runtime.admin_keys import admin_key_hashes
from turnout.gateway.server.app import GatewayApp
from turnout.gateway.server.limits import ServerLimits
from turnout.gateway.server.listener import bind_socket, serving
from turnout.store.snapshot import ProjectSnapshot, load_snapshot

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

    import httpx

    from turnout.access.sign_ins import SignInThrottle
    from turnout.gateway.runtime.live import Runtime
    from turnout.schema import FileConfig
    from turnout.store import Store

ADMIN_KEY = "adm-test-key-0123456789"
"""The admin key every test gateway accepts (written in its file as plaintext)."""
HASHED_ADMIN_KEY = "adm-second-key-9876543210"
"""A second admin key, written in the file as its hash."""
HEADERS = {"authorization": f"Bearer {ADMIN_KEY}"}

BASE_FILE: dict[str, Any] = {
    "project": "default",
    "server": {"auth": "keys"},
    "providers": [{"name": "file-mock", "kind": "mock"}],
    "routes": [
        {"name": "file-route", "models": ["file-*"], "targets": [{"provider": "file-mock"}]}
    ],
    "keys": [{"name": "file-app", "key": "tk_file_app_key_for_tests"}],
}


def file_config(data: dict[str, Any] | None = None) -> FileConfig:
    """A config file (`BASE_FILE` by default) with the two admin keys."""
    from turnout.access.keys import hash_key

    body = {**(BASE_FILE if data is None else data)}
    body["admin_keys"] = [ADMIN_KEY, hash_key(HASHED_ADMIN_KEY)]
    return parse_config(body, env={})


class StoreContext:
    """The test `AdminContext` (see the module)."""

    def __init__(self, store: Store, file: FileConfig) -> None:
        self.store = store
        self._file = file
        self._hashes = admin_key_hashes(file.admin_keys)
        self.runtimes: dict[str, Runtime | None] = {}
        self.app: GatewayApp | None = None
        self.project = file.project
        self.commits = 0
        self.reload()

    def admin_key_hashes(self) -> frozenset[str]:
        return self._hashes

    def file_config(self) -> FileConfig | None:
        return self._file

    def runtime_for(self, project_name: str) -> Runtime | None:
        if project_name not in self.runtimes:
            self.runtimes[project_name] = self._build(project_name)
        return self.runtimes[project_name]

    def served_runtimes(self) -> dict[str, Runtime]:
        names = [self.project, *self._snapshot.projects]
        found = {name: self.runtime_for(name) for name in names}
        return {name: runtime for name, runtime in found.items() if runtime is not None}

    def reload(self) -> None:
        """A fresh snapshot; runtimes are built from it when first asked for."""
        self._snapshot = load_snapshot(self.store)
        self.runtimes = {}

    def _build(self, name: str) -> Runtime | None:
        """The project's runtime (None when it fails to build or is not served)."""
        project = self._snapshot.projects.get(name)
        if project is None and name != self.project:
            return None
        try:
            return build_runtime(
                project_config(self._file, project or ProjectSnapshot(id="", name=name))
            )
        except ConfigError:
            return None

    async def committed(self) -> None:
        self.commits += 1
        self.reload()
        served = self.runtime_for(self.project)
        if self.app is not None and served is not None:
            self.app.swap_runtime(served)


def gateway_app(context: StoreContext, sign_ins: SignInThrottle | None = None) -> GatewayApp:
    """The gateway app serving the file project's runtime, with the admin API over `context`
    (and `sign_ins` as its throttle of failed admin keys, when given)."""
    runtime = context.runtime_for(context.project)
    assert runtime is not None
    app = GatewayApp(runtime, admin=context, sign_ins=sign_ins)
    context.app = app
    return app


@asynccontextmanager
async def running(
    context: StoreContext, sign_ins: SignInThrottle | None = None
) -> AsyncIterator[str]:
    """Serve the gateway of `context` on a free port until the block ends; yields its URL."""
    app = gateway_app(context, sign_ins)
    with bind_socket("127.0.0.1", 0) as sock:
        async with serving(app, sock, ServerLimits(shutdown_grace=0.0)):
            yield f"http://127.0.0.1:{sock.getsockname()[1]}"


@contextmanager
def running_in_thread(
    context: StoreContext, sign_ins: SignInThrottle | None = None
) -> Iterator[str]:
    """`running`, on an event loop in a thread of its own (for sync clients); yields its URL."""
    ready = threading.Event()
    found: list[str] = []
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()

    async def serve() -> None:
        async with running(context, sign_ins) as url:
            found.append(url)
            ready.set()
            await stop.wait()

    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    try:
        if not ready.wait(10):
            raise RuntimeError("the test gateway did not start")
        yield found[0]
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
        loop.close()


async def new_project(admin: httpx.AsyncClient) -> str:
    """The id of a new project with a name of its own."""
    reply = await admin.post("/admin/v1/projects", json={"name": f"p-{uuid.uuid4().hex[:12]}"})
    assert reply.status_code == 201, reply.text
    project_id: str = reply.json()["id"]
    return project_id


def error_of(reply: httpx.Response) -> dict[str, Any]:
    """The error of an answer, checked to be exactly the envelope."""
    body: dict[str, Any] = reply.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message", "meta"}, body
    assert isinstance(body["error"]["meta"], dict)
    error: dict[str, Any] = body["error"]
    return error
