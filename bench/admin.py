"""Benchmark: the admin API in one process, over a real socket, on a SQLite store.

- listing 1,000 routes: `GET /admin/v1/projects/{id}/routes`, p50 and p99;
- a write, end to end: from sending `PATCH` (a route's target model) to the first
  `/v1/chat/completions` answer served by the new model, p50 and p99. The PATCH is answered
  only once the new configuration is served (its reload rebuilds the whole project: 1,000
  routes), so the chat request right after it is the first that can see it;
- what the admin API costs a gateway that never uses it, and on its first request: the import
  of `turnout.gateway.admin.app` after the gateway's own modules, and the first
  `GET /admin/v1/openapi.json` (the document is built from the pydantic models once).

The gateway serves the store's project `bench` (file and store merged, as `turnout serve`
does) through a small `AdminContext` of this script's own: after each write it loads a store
snapshot, rebuilds the project's runtime and swaps it into the app.

Run: python bench/admin.py [--routes 1000] [--lists 200] [--writes 30]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
from cryptography.fernet import Fernet

from turnout.access.keys import hash_key
from turnout.config.load import parse_config
from turnout.config.stored import project_config
from turnout.gateway.runtime.live import Runtime
from turnout.gateway.server.app import GatewayApp
from turnout.gateway.server.limits import ServerLimits
from turnout.gateway.server.listener import bind_socket, serving
from turnout.store import SecretBox, migrate, open_store, service
from turnout.store.snapshot import load_snapshot

if TYPE_CHECKING:
    from turnout.schema import FileConfig
    from turnout.store import Store

ADMIN_KEY = "bench-admin-key"
CALLER_KEY = "tk_bench_caller_key"
PROJECT = "bench"
ADMIN = {"authorization": f"Bearer {ADMIN_KEY}"}


class BenchContext:
    """The admin context: the store, one admin key, the file, the served runtime."""

    def __init__(self, store: Store, file: FileConfig) -> None:
        self.store = store
        self.file = file
        self.app: GatewayApp | None = None
        self.reloads: list[float] = []
        self.runtime = self._build()

    def admin_key_hashes(self) -> frozenset[str]:
        return frozenset({hash_key(ADMIN_KEY)})

    def file_config(self) -> FileConfig | None:
        return self.file

    def runtime_for(self, project_name: str) -> Runtime | None:
        return self.runtime if project_name == PROJECT else None

    def _build(self) -> Runtime:
        snapshot = load_snapshot(self.store)
        return Runtime.from_config(project_config(self.file, snapshot.projects[PROJECT]))

    async def committed(self) -> None:
        started = time.perf_counter()
        self.runtime = self._build()
        self.reloads.append(time.perf_counter() - started)
        if self.app is not None:
            self.app.swap_runtime(self.runtime)


def _seed(store: Store, routes: int) -> str:
    """A project with one mock provider and `routes` routes; its id."""
    project: str = service.create_project(store, {"name": PROJECT})["id"]
    service.create_object(store, "provider", project, {"name": "mock", "kind": "mock"})
    for number in range(routes):
        body = {
            "name": f"route-{number:04d}",
            "models": [f"model-{number:04d}"],
            "targets": [{"provider": "mock", "model": "gpt-4o-mini"}],
        }
        service.create_object(store, "route", project, body)
    return project


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def _ms(values: list[float]) -> str:
    p50, p99 = statistics.median(values), _percentile(values, 0.99)
    return f"p50 {p50 * 1000:7.2f} ms   p99 {p99 * 1000:7.2f} ms   (n={len(values)})"


async def _measure(url: str, project: str, lists: int, writes: int, context: BenchContext) -> None:
    base = f"{url}/admin/v1/projects/{project}"
    async with (
        httpx.AsyncClient(headers=ADMIN, timeout=60) as admin,
        httpx.AsyncClient(
            base_url=url, headers={"authorization": f"Bearer {CALLER_KEY}"}, timeout=60
        ) as chat_client,
    ):
        started = time.perf_counter()
        document = await admin.get(f"{url}/admin/v1/openapi.json")
        first = time.perf_counter() - started
        assert document.status_code == 200
        print(f"first GET /admin/v1/openapi.json (builds the document): {first * 1000:.1f} ms")
        listed = (await admin.get(f"{base}/routes")).json()["data"]
        print(f"listing {len(listed)} routes:")
        times = []
        for _ in range(lists):
            started = time.perf_counter()
            reply = await admin.get(f"{base}/routes")
            times.append(time.perf_counter() - started)
            assert reply.status_code == 200
        print(f"  GET …/routes               {_ms(times)}")
        target = listed[0]
        body = {"model": target["models"][0], "messages": [{"role": "user", "content": "hi"}]}
        patches, visible = [], []
        for number in range(writes):
            model = f"served-{number}"
            started = time.perf_counter()
            patched = await admin.patch(
                f"{base}/routes/{target['id']}",
                json={"targets": [{"provider": "mock", "model": model}]},
            )
            answered = time.perf_counter()
            assert patched.status_code == 200, patched.text
            reply = await chat_client.post("/v1/chat/completions", json=body)
            seen = time.perf_counter()
            assert reply.json()["model"] == model, reply.text
            patches.append(answered - started)
            visible.append(seen - started)
        print(f"a PATCH to a route of {len(listed)} (reload included):")
        print(f"  PATCH answered             {_ms(patches)}")
        print(f"  first chat that sees it    {_ms(visible)}")
        print(f"  of which the reload        {_ms(context.reloads[-writes:])}")
        print("  (the reload: a store snapshot and the project's runtime, built and validated)")


def _import_cost() -> None:
    """The admin API's import time after the gateway's modules, in a fresh interpreter."""
    code = (
        "import time\n"
        "import turnout.gateway.server.app, turnout.gateway.commands.serve\n"
        "import turnout.store, turnout.config.stored\n"
        "t = time.perf_counter()\n"
        "import turnout.gateway.admin.app\n"
        "print(round((time.perf_counter() - t) * 1000, 1))\n"
    )
    runs = [
        float(
            subprocess.run(  # noqa: S603 - this interpreter, fixed code
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(5)
    ]
    print(
        f"import turnout.gateway.admin.app after the gateway: {statistics.median(runs):.1f} ms"
        " (median of 5 fresh interpreters; paid on the first /admin/ request only)"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--routes", type=int, default=1000)
    parser.add_argument("--lists", type=int, default=200)
    parser.add_argument("--writes", type=int, default=30)
    args = parser.parse_args()
    importlib.import_module("turnout.gateway.admin.app")  # measured apart, below
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(
            f"sqlite:///{Path(folder) / 'turnout.db'}",
            secrets=SecretBox(Fernet.generate_key().decode()),
        )
        migrate(store)
        started = time.perf_counter()
        project = _seed(store, args.routes)
        print(f"seeded {args.routes} routes in {time.perf_counter() - started:.1f} s")
        data: dict[str, Any] = {"project": PROJECT, "server": {"auth": "keys"}}
        data["keys"] = [{"name": "bench", "key": CALLER_KEY}]
        context = BenchContext(store, parse_config(data, env={}))
        app = GatewayApp(context.runtime, admin=context)
        context.app = app
        with bind_socket("127.0.0.1", 0) as sock:
            async with serving(app, sock, ServerLimits(shutdown_grace=0.0)):
                url = f"http://127.0.0.1:{sock.getsockname()[1]}"
                await _measure(url, project, args.lists, args.writes, context)
        store.close()
    _import_cost()


if __name__ == "__main__":
    asyncio.run(main())
