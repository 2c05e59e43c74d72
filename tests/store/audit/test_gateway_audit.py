"""The audit end to end, on both backends: a real gateway on a 127.0.0.1 socket with the
store's audit writer as its observer's sink, called with the official OpenAI SDK."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import openai
import pytest

from tests.gateway._app_support import USER, client_of, mock_provider
from tests.store.audit._support import counts
from turnout.config.load import parse_config
from turnout.gateway.observe.observer import Observer
from turnout.gateway.resolution.lookups import build_runtime
from turnout.gateway.server.app import GatewayApp
from turnout.gateway.server.limits import ServerLimits
from turnout.gateway.server.listener import bind_socket, serving
from turnout.store.audit_policy import AuditPolicy
from turnout.store.ledger import AuditWriter, audit_sink
from turnout.store.usage import get_request, usage_report

if TYPE_CHECKING:
    from pathlib import Path

    from turnout.store import Store

APP_KEY = "tk_audit-test-key-0123456789"
BACKUP_PRICE = {"input": 3.0, "output": 15.0}
PRICE = {"input": 2.0, "output": 8.0}
CONFIG: dict[str, Any] = {
    "server": {"auth": "keys"},
    "keys": [{"name": "app", "key": "${APP_KEY}"}],
    "providers": [
        mock_provider("primary", prices={"flaky/fault:status=503": {"input": 1, "output": 1}}),
        mock_provider("backup", prices={"backup-model": BACKUP_PRICE}),
    ],
    "routes": [
        {
            "name": "main",
            "models": ["gpt-4o-mini"],
            "targets": [
                {"provider": "primary", "model": "flaky/fault:status=503"},
                {"provider": "backup", "model": "backup-model"},
            ],
        },
        {
            "name": "down",
            "models": ["down"],
            "targets": [{"provider": "primary", "model": "down/fault:status=503"}],
        },
    ],
}


async def test_a_routed_request_leaves_its_audit_and_a_priced_ledger_entry(
    store: Store, tmp_path: Path
) -> None:
    """A request that fails over leaves one audit row (caller's key name, never the key) with
    both attempt rows, and one usage entry priced on the provider and model that served."""
    runtime = build_runtime(parse_config(CONFIG, env={"APP_KEY": APP_KEY}))
    writer = audit_sink(store, spill_dir=tmp_path / "spill")
    await writer.start()
    app = GatewayApp(runtime, observer=Observer(sink=writer))
    with bind_socket("127.0.0.1", 0) as sock:
        async with serving(app, sock, ServerLimits(shutdown_grace=0.0)):
            base = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
            async with openai.AsyncOpenAI(base_url=base, api_key=APP_KEY, max_retries=0) as sdk:
                raw = await sdk.chat.completions.with_raw_response.create(
                    model="gpt-4o-mini",
                    messages=USER,  # type: ignore[arg-type]
                )
    answer = raw.parse()
    request_id = raw.headers["x-request-id"]
    await writer.aclose()  # the server has ended: every request was handed to the writer

    assert counts(store) == (1, 2, 1)
    found = get_request(store, request_id)
    assert found is not None
    assert (found["key_name"], found["endpoint"], found["status"], found["outcome"]) == (
        "app",
        "/v1/chat/completions",
        200,
        "answered",
    )
    assert APP_KEY not in str(found)
    assert [(a["provider"], a["outcome"], a["status"]) for a in found["attempts"]] == [
        ("primary", "failed", 503),
        ("backup", "answered", None),
    ]
    assert answer.usage is not None
    expected = (
        answer.usage.prompt_tokens * BACKUP_PRICE["input"]
        + answer.usage.completion_tokens * BACKUP_PRICE["output"]
    ) / 1e6
    (billed,) = usage_report(store, group_by="model")
    assert (billed["provider"], billed["model"], billed["requests"]) == (
        "backup",
        "backup-model",
        1,
    )
    assert billed["input_tokens"] == answer.usage.prompt_tokens
    assert billed["cost"] == pytest.approx(expected)


async def test_a_full_audit_queue_is_counted_in_metrics_and_usage_is_kept(
    store: Store, tmp_path: Path
) -> None:
    """With no room in the audit queue, a request's audit row is dropped and counted in
    `turnout_audit_dropped_total`; its usage entry is still written."""
    runtime = build_runtime(parse_config(CONFIG, env={"APP_KEY": APP_KEY}))
    writer = AuditWriter(store, spill_dir=tmp_path, policy=AuditPolicy(max_queue=0))
    observer = Observer(sink=writer)
    app = GatewayApp(runtime, observer=observer)
    async with client_of(app) as client:
        reply = await client.post(
            "/v1/chat/completions",
            json={"model": "gpt-4o-mini", "messages": USER},
            headers={"authorization": f"Bearer {APP_KEY}"},
        )
    assert reply.status_code == 200
    await writer.aclose()
    assert counts(store) == (0, 0, 1)
    assert b"turnout_audit_dropped_total 1.0" in observer.metrics.render()


async def test_a_streamed_answer_is_audited_and_billed_when_it_ends(
    store: Store, tmp_path: Path
) -> None:
    """A streamed answer leaves its audit row and a usage entry on the served model once the
    stream has ended."""
    runtime = build_runtime(parse_config(CONFIG, env={"APP_KEY": APP_KEY}))
    writer = AuditWriter(store, spill_dir=tmp_path)
    app = GatewayApp(runtime, observer=Observer(sink=writer))
    async with client_of(app) as client:
        reply = await client.post(
            "/v1/chat/completions",
            json={"model": "gpt-4o-mini", "messages": USER, "stream": True},
            headers={"authorization": f"Bearer {APP_KEY}"},
        )
    assert reply.status_code == 200
    await writer.aclose()
    found = get_request(store, reply.headers["x-request-id"])
    assert found is not None
    assert (found["served_model"], found["status"]) == ("backup-model", 200)
    (billed,) = usage_report(store, group_by="model")
    assert (billed["provider"], billed["model"]) == ("backup", "backup-model")
    assert billed["output_tokens"] > 0


async def test_a_failed_request_is_audited_with_its_error_and_not_billed(
    store: Store, tmp_path: Path
) -> None:
    """A request no target answers leaves an audit row (outcome `failed`, the status and error
    code sent) and no usage entry."""
    runtime = build_runtime(parse_config(CONFIG, env={"APP_KEY": APP_KEY}))
    writer = AuditWriter(store, spill_dir=tmp_path)
    app = GatewayApp(runtime, observer=Observer(sink=writer))
    async with client_of(app) as client:
        reply = await client.post(
            "/v1/chat/completions",
            json={"model": "down", "messages": USER},
            headers={"authorization": f"Bearer {APP_KEY}"},
        )
    assert reply.status_code >= 500
    await writer.aclose()
    found = get_request(store, reply.headers["x-request-id"])
    assert found is not None
    assert (found["outcome"], found["status"]) == ("failed", reply.status_code)
    assert found["error_code"] == reply.json()["error"]["code"]
    assert counts(store) == (1, 1, 0)


async def _read(stream: object, into: list[str]) -> None:
    """Read an OpenAI SDK stream to its end, keeping the text in `into` (even when it raises)."""
    assert isinstance(stream, openai.AsyncStream)
    async for chunk in stream:
        into.extend(choice.delta.content or "" for choice in chunk.choices)


async def test_a_stream_broken_after_content_is_audited_and_billed_once(
    store: Store, tmp_path: Path
) -> None:
    """A stream cut after sending content through the OpenAI SDK leaves one audit row (failed,
    `stream_broken`) and one usage entry on the model that sent it, marked estimated."""
    cut_model = "cut-model/fault:chunks=6;cut=3"
    config = {
        **CONFIG,
        "providers": [*CONFIG["providers"], mock_provider("cutter", prices={cut_model: PRICE})],
        "routes": [
            *CONFIG["routes"],
            {
                "name": "cut",
                "models": ["cut"],
                "targets": [{"provider": "cutter", "model": cut_model}],
            },
        ],
    }
    runtime = build_runtime(parse_config(config, env={"APP_KEY": APP_KEY}))
    writer = AuditWriter(store, spill_dir=tmp_path)
    app = GatewayApp(runtime, observer=Observer(sink=writer))
    received: list[str] = []
    with bind_socket("127.0.0.1", 0) as sock:
        async with serving(app, sock, ServerLimits(shutdown_grace=0.0)):
            base = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
            async with openai.AsyncOpenAI(base_url=base, api_key=APP_KEY, max_retries=0) as sdk:
                raw = await sdk.chat.completions.with_raw_response.create(
                    model="cut",
                    messages=USER,  # type: ignore[arg-type]
                    stream=True,
                )
                with pytest.raises(openai.APIError):
                    await _read(raw.parse(), received)
    await writer.aclose()
    assert "".join(received)
    assert counts(store) == (1, 1, 1)
    found = get_request(store, raw.headers["x-request-id"])
    assert found is not None
    assert (found["outcome"], found["error_code"]) == ("failed", "stream_broken")
    assert "usage estimated" in found["routing"]["attempts"][0]["reason"]
    (billed,) = usage_report(store, group_by="model")
    assert (billed["provider"], billed["model"], billed["requests"]) == ("cutter", cut_model, 1)
    assert billed["output_tokens"] > 0
    assert billed["cost"] == pytest.approx(
        (billed["input_tokens"] * PRICE["input"] + billed["output_tokens"] * PRICE["output"]) / 1e6
    )
