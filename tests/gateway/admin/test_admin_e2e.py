"""End to end, on SQLite and PostgreSQL: a project, a provider in front of `turnout
mock-upstream`, a route and a key, all made through the admin API, then the official OpenAI
SDK calls the gateway with that key and is served by that route; a PATCH is served by the
next request; a revoked key is refused."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx
import openai
import pytest

from tests.gateway.admin._support import HEADERS, StoreContext, file_config, running
from turnout.mock_upstream import MockUpstream

if TYPE_CHECKING:
    from turnout.store import Store

FILE: dict[str, Any] = {"project": "e2e", "server": {"auth": "keys"}}
USER: Any = [{"role": "user", "content": "Why is checkout failing?"}]


async def test_objects_made_through_the_api_serve_chat(store: Store) -> None:
    """A route and key created through the admin API serve the OpenAI SDK; a PATCH to the
    route is what the very next request uses; a revoked key is 401."""
    context = StoreContext(store, file_config(FILE))
    async with (
        MockUpstream() as upstream,
        running(context) as url,
        httpx.AsyncClient(base_url=f"{url}/admin/v1", headers=HEADERS) as admin,
    ):
        project = (await admin.post("/projects", json={"name": "e2e"})).json()
        base = f"/projects/{project['id']}"
        provider = await admin.post(
            f"{base}/providers",
            json={
                "name": "vendor",
                "kind": "openai",
                "api_key": "sk-e2e-vendor",
                "base_url": upstream.openai_base_url,
            },
        )
        assert provider.status_code == 201, provider.text
        route = await admin.post(
            f"{base}/routes",
            json={
                "name": "support",
                "models": ["support-*"],
                "targets": [{"ai_provider_id": provider.json()["id"], "model": "gpt-4o-mini"}],
            },
        )
        assert route.status_code == 201, route.text
        key = (await admin.post(f"{base}/keys", json={"name": "app"})).json()
        client = openai.AsyncOpenAI(api_key=key["key"], base_url=f"{url}/v1", max_retries=0)
        async with client:
            first = await client.chat.completions.create(model="support-bot", messages=USER)
            assert first.model == "gpt-4o-mini"
            assert first.model_extra is not None
            assert first.model_extra["routing"]["route"] == "support"
            patched = await admin.patch(
                f"{base}/routes/{route.json()['id']}",
                json={"targets": [{"provider": "vendor", "model": "gpt-4o"}]},
            )
            assert patched.status_code == 200, patched.text
            second = await client.chat.completions.create(model="support-bot", messages=USER)
            assert second.model == "gpt-4o"
            revoked = await admin.post(f"{base}/keys/{key['id']}/revoke")
            assert revoked.status_code == 200
            with pytest.raises(openai.AuthenticationError):
                await client.chat.completions.create(model="support-bot", messages=USER)
    assert context.commits == 6
