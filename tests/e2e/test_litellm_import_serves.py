"""End to end: a LiteLLM proxy config, imported and loaded from the file the import wrote,
serves the callers the LiteLLM proxy served, with the key they already send."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx
import pytest_asyncio

from tests.e2e._gateway import RunningGateway, running_runtime
from turnout.config.litellm import convert_litellm
from turnout.config.load import load_config
from turnout.gateway.resolution.lookups import build_runtime
from turnout.mock_upstream import MockUpstream

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

BODY = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Why?"}]}


def litellm_config(base_url: str) -> str:
    """LiteLLM's quick-start config: one model group, the documented master key `sk-1234`."""
    return f"""
model_list:
  - model_name: gpt-4o-mini
    litellm_params:
      model: openai/gpt-4o-mini
      api_base: {base_url}
      api_key: os.environ/OPENAI_API_KEY
general_settings:
  master_key: sk-1234
"""


@pytest_asyncio.fixture
async def gateway(tmp_path: Path) -> AsyncIterator[RunningGateway]:
    async with MockUpstream() as upstream:
        result = convert_litellm(litellm_config(upstream.openai_base_url))
        path = tmp_path / "turnout.yaml"
        path.write_text(result.yaml, encoding="utf-8")
        env = {"OPENAI_API_KEY": "sk-openai-org", "TURNOUT_IMPORTED_KEY_1": "sk-1234"}
        assert sorted(result.variables) == sorted(env)
        runtime = build_runtime(load_config(path, env=env))
        async with running_runtime(runtime) as running:
            yield running


async def test_the_master_key_is_a_working_caller_key(gateway: RunningGateway) -> None:
    """`Authorization: Bearer sk-1234` is served (200); no key or another key gets 401."""
    async with httpx.AsyncClient(base_url=gateway.openai_base_url) as client:
        served = await client.post(
            "/chat/completions", json=BODY, headers={"Authorization": "Bearer sk-1234"}
        )
        missing = await client.post("/chat/completions", json=BODY)
        wrong = await client.post(
            "/chat/completions", json=BODY, headers={"Authorization": "Bearer sk-12345"}
        )
    assert served.status_code == 200
    assert served.json()["choices"][0]["message"]["content"] == "mock answer from gpt-4o-mini"
    assert (missing.status_code, wrong.status_code) == (401, 401)
    assert missing.json()["error"]["code"] == "invalid_api_key"
