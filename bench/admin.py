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

`--replicas redis|postgres|poll` measures instead how fast a write reaches another replica: two
`turnout serve` processes, A and B, on one store (PostgreSQL at `--postgres`, in a schema of
their own, with Redis at `--redis` for `redis`; a SQLite file for `poll`); from sending a
`PATCH` of a route's target model to A to the first chat answer from B served by the new model
(B is asked every 2 ms), p50 and p99 over `--writes` writes.

Run: python bench/admin.py --replicas postgres [--postgres URL] [--redis URL] [--writes 30]
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
from _replicas import ms, start_replica
from cryptography.fernet import Fernet
from sqlalchemy import text

from turnout.access.keys import hash_key
from turnout.config.load import parse_config
from turnout.config.stored import project_config
from turnout.gateway.resolution.lookups import build_runtime
from turnout.gateway.server.app import GatewayApp
from turnout.gateway.server.limits import ServerLimits
from turnout.gateway.server.listener import bind_socket, serving
from turnout.store import SecretBox, migrate, open_store, service
from turnout.store.snapshot import load_snapshot

if TYPE_CHECKING:
    from turnout.gateway.runtime.live import Runtime
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

    def served_runtimes(self) -> dict[str, Runtime]:
        return {PROJECT: self.runtime}

    def _build(self) -> Runtime:
        snapshot = load_snapshot(self.store)
        return build_runtime(project_config(self.file, snapshot.projects[PROJECT]))

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
        print(f"  GET …/routes               {ms(times)}")
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
        print(f"  PATCH answered             {ms(patches)}")
        print(f"  first chat that sees it    {ms(visible)}")
        print(f"  of which the reload        {ms(context.reloads[-writes:])}")
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


_REPLICA_CONFIG = """\
project: default
store: "{store}"
state: "{state}"
server: {{auth: keys, shutdown_grace_seconds: 0}}
admin_keys: ["{admin}"]
providers:
  - {{name: m, kind: mock}}
routes:
  - {{name: main, models: [gpt-4o-mini], targets: [{{provider: m}}]}}
keys: [{{name: bench, key: {caller}}}]
"""


async def _replicas(feed: str, postgres: str, redis: str, writes: int) -> None:
    """`--replicas`: the time from a PATCH on A to B's first answer that sees it."""
    schema = f"bench_{int(time.time() * 1000)}"
    setup = None
    with tempfile.TemporaryDirectory() as folder:
        if feed == "poll":
            store = f"sqlite:///{Path(folder) / 'turnout.db'}"
        else:
            setup = open_store(postgres)
            with setup.engine.begin() as connection:
                connection.execute(text(f'CREATE SCHEMA "{schema}"'))
            store = f"{postgres}?options=-csearch_path%3D{schema}"
        config = Path(folder) / "turnout.yaml"
        state = redis if feed == "redis" else "memory"
        config.write_text(
            _REPLICA_CONFIG.format(store=store, state=state, admin=ADMIN_KEY, caller=CALLER_KEY)
        )
        processes: list[tuple[asyncio.subprocess.Process, str]] = []
        try:
            processes.append(await start_replica(config))
            processes.append(await start_replica(config))
            (_, a), (_, b) = processes
            await _measure_replicas(feed, a, b, writes)
        finally:
            for process, _url in processes:
                process.terminate()
                await process.wait()
            if setup is not None:
                with setup.engine.begin() as connection:
                    connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
                setup.close()


async def _measure_replicas(feed: str, a: str, b: str, writes: int) -> None:
    caller = {"authorization": f"Bearer {CALLER_KEY}"}
    async with (
        httpx.AsyncClient(base_url=f"{a}/admin/v1", headers=ADMIN, timeout=60) as admin,
        httpx.AsyncClient(base_url=b, headers=caller, timeout=60) as on_b,
    ):
        project = next(
            p for p in (await admin.get("/projects")).json()["data"] if p["name"] == "default"
        )
        base = f"/projects/{project['id']}/routes"
        created = await admin.post(
            base,
            json={
                "name": "bench",
                "models": ["bench-model"],
                "targets": [{"provider": "m", "model": "served-start"}],
            },
        )
        assert created.status_code == 201, created.text
        route = created.json()["id"]
        body = {"model": "bench-model", "messages": [{"role": "user", "content": "hi"}]}
        for _ in range(5000):  # B serves the new route
            if (await on_b.post("/v1/chat/completions", json=body)).status_code == 200:
                break
            await asyncio.sleep(0.002)
        patches, seen_on_b = [], []
        for number in range(writes):
            model = f"served-{number}"
            started = time.perf_counter()
            patched = await admin.patch(
                f"{base}/{route}", json={"targets": [{"provider": "m", "model": model}]}
            )
            answered = time.perf_counter()
            assert patched.status_code == 200, patched.text
            for _ in range(5000):
                reply = await on_b.post("/v1/chat/completions", json=body)
                if reply.json().get("model") == model:
                    break
                await asyncio.sleep(0.002)
            else:
                raise AssertionError(f"B never served {model}")
            seen_on_b.append(time.perf_counter() - started)
            patches.append(answered - started)
            await asyncio.sleep(0.2)  # apart from the last write's wake
        print(f"a PATCH on replica A, seen by replica B ({feed} feed):")
        print(f"  PATCH answered by A        {ms(patches)}")
        print(f"  first answer from B        {ms(seen_on_b)}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--routes", type=int, default=1000)
    parser.add_argument("--lists", type=int, default=200)
    parser.add_argument("--writes", type=int, default=30)
    parser.add_argument("--replicas", choices=["redis", "postgres", "poll"])
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/12")
    args = parser.parse_args()
    if args.replicas is not None:
        await _replicas(args.replicas, args.postgres, args.redis, args.writes)
        return
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
