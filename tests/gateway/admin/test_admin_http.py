"""The admin API's HTTP rules over a real socket: the admin key, unknown paths and methods,
content types, body size and malformed JSON, all in the error envelope; and the mount in the
gateway (none without an admin context; imported only when first asked)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx
import pytest
import pytest_asyncio

from tests.e2e._gateway import running_gateway
from tests.gateway.admin._support import (
    ADMIN_KEY,
    HASHED_ADMIN_KEY,
    HEADERS,
    StoreContext,
    error_of,
    file_config,
    new_project,
    running,
)
from tests.store.conftest import store_on
from turnout.store import migrate

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from turnout.gateway.runtime.live import Runtime

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def url(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    """A gateway with the admin API over a SQLite store (these rules do not touch the store's
    backend)."""
    folder: Path = tmp_path_factory.mktemp("store")
    with store_on("sqlite", folder, None) as store:
        migrate(store)
        async with running(StoreContext(store, file_config())) as found:
            yield found


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"authorization": "Bearer not-the-key"},
        {"x-api-key": "not-the-key"},
        {"authorization": f"Basic {ADMIN_KEY}"},
        {"authorization": "Bearer", "x-api-key": "not-the-key-either"},
    ],
)
async def test_a_missing_or_wrong_admin_key_is_401(url: str, headers: dict[str, str]) -> None:
    """No key, a wrong key or another scheme: 401 `invalid_admin_key`, on any path."""
    async with httpx.AsyncClient(base_url=url, headers=headers) as client:
        for path in ("/admin/v1/projects", "/admin/v1/nowhere"):
            reply = await client.get(path)
            assert reply.status_code == 401
            error = error_of(reply)
            assert error["code"] == "invalid_admin_key"
            assert error["meta"] == {}


@pytest.mark.parametrize(
    "headers",
    [
        {"authorization": f"Bearer {ADMIN_KEY}"},
        {"x-api-key": ADMIN_KEY},
        {"authorization": f"bearer {HASHED_ADMIN_KEY}"},
    ],
)
async def test_admin_keys_by_either_header_plain_or_hashed(
    url: str, headers: dict[str, str]
) -> None:
    """`Authorization: Bearer` or `x-api-key`; a key written in the file plain or hashed."""
    async with httpx.AsyncClient(base_url=url, headers=headers) as client:
        assert (await client.get("/admin/v1/projects")).status_code == 200


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        ("GET", "/admin/v1/nowhere", 404, "NOT_FOUND"),
        ("GET", "/admin/v1/projects/", 404, "NOT_FOUND"),
        ("GET", "/admin/v1/projects/p/unknown-kind", 404, "NOT_FOUND"),
        ("GET", "/admin/v2/projects", 404, "NOT_FOUND"),
        ("PUT", "/admin/v1/projects", 405, "method_not_allowed"),
        ("DELETE", "/admin/v1/health", 405, "method_not_allowed"),
        ("GET", "/admin/v1/projects/%00", 404, "NOT_FOUND"),
        ("GET", "/admin/v1/projects/" + "x" * 129, 404, "NOT_FOUND"),
    ],
)
async def test_unknown_paths_and_methods(
    url: str, method: str, path: str, status: int, code: str
) -> None:
    """404 for a path no endpoint has (or an id no object can have), 405 with the allowed
    methods for a known path."""
    async with httpx.AsyncClient(base_url=url, headers=HEADERS) as client:
        reply = await client.request(method, path)
    assert reply.status_code == status
    assert error_of(reply)["code"] == code
    if status == 405:
        assert reply.headers["allow"] == ", ".join(error_of(reply)["meta"]["allowed"])


@pytest.mark.parametrize(
    ("content", "content_type", "status", "code", "says"),
    [
        (b'{"name": ', "application/json", 400, "invalid_request", "not valid JSON"),
        (b"[1, 2]", "application/json", 400, "invalid_request", "not an array"),
        (b"", "application/json", 400, "invalid_request", "empty"),
        (b'{"name": "a\\u0000b"}', "application/json", 400, "invalid_request", "NUL"),
        (b'{"name": "x"}', "text/plain", 415, "unsupported_media_type", "text/plain"),
        (b'{"name": "x"}', "", 415, "unsupported_media_type", "application/json"),
        (
            b"{" + b" " * (1024 * 1024) + b"}",
            "application/json",
            413,
            "request_too_large",
            "1048576",
        ),
    ],
)
async def test_bodies_that_are_refused(
    url: str, *, content: bytes, content_type: str, status: int, code: str, says: str
) -> None:
    """Malformed JSON, a body that is not an object, a wrong content type and a body over
    1 MiB are refused in the envelope, naming the problem."""
    headers = {**HEADERS, "content-type": content_type}
    async with httpx.AsyncClient(base_url=url, headers=headers) as client:
        reply = await client.post("/admin/v1/projects", content=content)
    assert reply.status_code == status
    error = error_of(reply)
    assert error["code"] == code
    assert says in error["message"]


async def test_merge_patch_type_only_on_patch(url: str) -> None:
    """`application/merge-patch+json` is a PATCH body; a POST takes only JSON (415)."""
    headers = {**HEADERS, "content-type": "application/merge-patch+json"}
    async with httpx.AsyncClient(base_url=url, headers=headers) as client:
        reply = await client.post("/admin/v1/projects", content=b'{"name": "x"}')
    assert reply.status_code == 415


async def test_changes_filters_that_are_not_numbers(url: str) -> None:
    """`limit` and `since_version` must be whole numbers: else 400 naming the filter."""
    async with httpx.AsyncClient(base_url=url, headers=HEADERS) as client:
        for query in ("limit=0", "limit=ten", "since_version=-1"):
            reply = await client.get(f"/admin/v1/changes?{query}")
            assert reply.status_code == 400
            name = query.partition("=")[0]
            assert error_of(reply)["meta"]["errors"][0]["path"] == name


async def test_a_write_is_served_before_it_is_answered(url: str) -> None:
    """Each write awaits the context's reload; a read does not."""
    async with httpx.AsyncClient(base_url=url, headers=HEADERS) as client:
        project = await new_project(client)
        reply = await client.get(f"/admin/v1/projects/{project}")
    assert reply.status_code == 200


async def test_no_admin_context_no_admin_api() -> None:
    """A gateway without an admin context answers `/admin/...` like any unknown path: 404."""
    config = {"server": {"auth": "open"}, "providers": [{"name": "m", "kind": "mock"}]}
    async with running_gateway(config) as gateway, httpx.AsyncClient() as client:
        reply = await client.get(f"{gateway.url}/admin/v1/projects", headers=HEADERS)
    assert reply.status_code == 404


async def test_the_openapi_document_describes_every_endpoint(url: str) -> None:
    """OpenAPI 3.1 with every admin endpoint, a request schema for each body (merge-patch
    for PATCH) and a response schema for each success with a body; errors are the envelope."""
    async with httpx.AsyncClient(base_url=url, headers=HEADERS) as client:
        document = (await client.get("/admin/v1/openapi.json")).json()
    assert document["openapi"] == "3.1.0"
    paths = document["paths"]
    expected = {"/admin/v1/projects", "/admin/v1/changes", "/admin/v1/health"}
    expected |= {"/admin/v1/upstreams", "/admin/v1/routing/test", "/admin/v1/openapi.json"}
    expected |= {"/admin/v1/requests/{request_id}", "/admin/v1/usage"}
    for plural in ("providers", "routes", "consumers", "keys", "bindings", "policies"):
        expected |= {
            f"/admin/v1/projects/{{project_id}}/{plural}",
            f"/admin/v1/projects/{{project_id}}/{plural}/{{object_id}}",
        }
    assert expected <= set(paths)
    patch = paths["/admin/v1/projects/{project_id}/routes/{object_id}"]["patch"]
    assert set(patch["requestBody"]["content"]) == {
        "application/json",
        "application/merge-patch+json",
    }
    schemas = document["components"]["schemas"]
    assert "ai_provider_id" in schemas["TargetBody"]["properties"]
    assert "max_retries" in schemas["TargetConfig"]["properties"]
    for item in paths.values():
        for operation in item.values():
            assert "401" in operation["responses"]
            for status, answer in operation["responses"].items():
                if status.startswith(("4", "5")) or status == "default":
                    schema = answer["content"]["application/json"]["schema"]
                    assert schema == {"$ref": "#/components/schemas/ErrorEnvelope"}


class _ReloadFails(StoreContext):
    async def committed(self) -> None:
        raise RuntimeError("reload failed")


async def test_a_failed_reload_does_not_undo_an_answered_write(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A write whose reload fails is stored and answered as done; the failure is logged."""
    with store_on("sqlite", tmp_path, None) as store:
        migrate(store)
        async with (
            running(_ReloadFails(store, file_config())) as found,
            httpx.AsyncClient(base_url=found, headers=HEADERS) as client,
        ):
            created = await client.post("/admin/v1/projects", json={"name": "kept"})
            listed = (await client.get("/admin/v1/projects")).json()["data"]
    assert created.status_code == 201
    assert [project["name"] for project in listed] == ["kept"]
    assert "reloading the configuration failed" in caplog.text


class _RuntimeFails(StoreContext):
    failing = False

    def runtime_for(self, project_name: str) -> Runtime | None:
        if self.failing:
            raise RuntimeError("secret detail of the failure")
        return super().runtime_for(project_name)


async def test_an_unexpected_failure_is_a_500_in_the_envelope_without_its_cause(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A failure of turnout's own is 500 `internal_error` in the envelope; its cause is in
    the log, never in the answer."""
    with store_on("sqlite", tmp_path, None) as store:
        migrate(store)
        context = _RuntimeFails(store, file_config())
        async with (
            running(context) as found,
            httpx.AsyncClient(base_url=found, headers=HEADERS) as client,
        ):
            context.failing = True
            reply = await client.get("/admin/v1/health")
    assert reply.status_code == 500
    assert error_of(reply)["code"] == "internal_error"
    assert "secret detail" not in reply.text
    assert "secret detail" in caplog.text
