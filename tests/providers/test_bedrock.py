"""The bedrock kind beyond the conformance suite: the wire per model, SigV4 signatures the
mock checks, the AWS credential chain, credentials refreshed off the hot path, and the missing
`aws` extra."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from botocore.credentials import ReadOnlyCredentials, RefreshableCredentials

from turnout.config.load import parse_config
from turnout.errors import (
    AuthenticationFailed,
    ConfigError,
    ProviderError,
    ProviderUnavailable,
    RateLimited,
)
from turnout.providers import Bedrock
from turnout.providers._aws_auth import AwsSigner
from turnout.wire.aws_eventstream import EventStreamDecoder, Frame, encode_frame
from turnout.wire.model import ChatChunk, ChatRequest, Message

from ._raw_http import RawServer, answering, chunked
from .conftest import AWS_CREDENTIALS

if TYPE_CHECKING:
    from turnout.mock_upstream import ThreadedMockUpstream

    from ._raw_http import Answer

CLAUDE = "us.anthropic.claude-sonnet-4-20250514-v1:0"
FIXTURES = Path(__file__).parent.parent / "fixtures" / "bedrock"
NOVA = "amazon.nova-pro-v1:0"


def ask(model: str) -> ChatRequest:
    """A one-message request for `model`."""
    return ChatRequest([Message.user("hello")], model=model)


def bedrock(upstream: ThreadedMockUpstream, **options: Any) -> Bedrock:
    """A bedrock provider on the shared mock, with the test keys unless told otherwise."""
    key_id, secret = AWS_CREDENTIALS
    options.setdefault("access_key_id", key_id)
    options.setdefault("secret_access_key", secret)
    return Bedrock("eu-west-1", base_url=upstream.url, **options)


@pytest.fixture(autouse=True)
def _no_aws_files(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No developer's AWS settings, files or instance metadata reach these tests."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.mark.parametrize(
    ("model", "api", "path"),
    [
        (CLAUDE, None, "invoke"),
        (NOVA, None, "converse"),
        (CLAUDE, "converse", "converse"),
        ("anthropic.claude-3-haiku-20240307-v1:0", None, "invoke"),
    ],
)
async def test_the_wire_follows_the_model_unless_api_says(
    upstream: ThreadedMockUpstream, model: str, api: str | None, path: str
) -> None:
    """Claude models go to InvokeModel, the rest to Converse; `api` forces one; the model id
    is one escaped path segment."""
    upstream.reset()
    provider = bedrock(upstream, api=api)
    try:
        response = await provider.complete(ask(model))
        chunks = [c async for c in provider.stream(ask(model))]
    finally:
        await provider.aclose()
    assert response.text == f"mock answer from {model}"
    assert "".join(c.delta for c in chunks) == response.text
    escaped = model.replace(":", "%3A")
    paths = [entry["path"] for entry in upstream.requests()]
    stream_path = "invoke-with-response-stream" if path == "invoke" else "converse-stream"
    assert paths == [f"/model/{escaped}/{path}", f"/model/{escaped}/{stream_path}"]


async def test_a_wrong_secret_is_refused_as_bedrock_refuses_it(
    upstream: ThreadedMockUpstream,
) -> None:
    """A signature made with the wrong secret is a 403 auth failure naming the provider's own
    credentials, with no secret in the message; a wrong key id likewise."""
    for options in ({"secret_access_key": "not-the-secret"}, {"access_key_id": "AKIDOTHER"}):
        provider = bedrock(upstream, **options)
        try:
            with pytest.raises(AuthenticationFailed) as caught:
                await provider.complete(ask(NOVA))
        finally:
            await provider.aclose()
        assert caught.value.status == 403
        assert caught.value.message.startswith('provider "bedrock" rejected its configured key')
        assert "not-the-secret" not in str(caught.value)


async def test_session_tokens_are_signed_and_sent(upstream: ThreadedMockUpstream) -> None:
    """Temporary credentials send `x-amz-security-token`, inside the signature."""
    upstream.reset()
    provider = bedrock(upstream, session_token="session-token-value")
    try:
        await provider.complete(ask(NOVA))
    finally:
        await provider.aclose()
    (entry,) = upstream.app.log.entries()
    headers = entry.request_headers
    assert headers["x-amz-security-token"] == "session-token-value"
    assert "x-amz-security-token" in headers["authorization"].split("SignedHeaders=")[1]


async def test_the_standard_chain_reads_the_environment(
    upstream: ThreadedMockUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without keys in the config, the AWS environment variables sign the call."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", AWS_CREDENTIALS[0])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_CREDENTIALS[1])
    provider = Bedrock("eu-west-1", base_url=upstream.url)
    try:
        assert (await provider.complete(ask(NOVA))).text == f"mock answer from {NOVA}"
    finally:
        await provider.aclose()


async def test_the_standard_chain_reads_a_profile(
    upstream: ThreadedMockUpstream, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`profile` picks a section of the shared credentials file."""
    credentials = tmp_path / "credentials"
    key_id, secret = AWS_CREDENTIALS
    credentials.write_text(
        f"[other]\naws_access_key_id = AKIDWRONG\naws_secret_access_key = wrong\n"
        f"[bedrock-test]\naws_access_key_id = {key_id}\naws_secret_access_key = {secret}\n"
    )
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    provider = Bedrock("eu-west-1", base_url=upstream.url, profile="bedrock-test")
    try:
        assert (await provider.complete(ask(NOVA))).text == f"mock answer from {NOVA}"
    finally:
        await provider.aclose()


async def test_no_credentials_anywhere_sends_nothing(upstream: ThreadedMockUpstream) -> None:
    """With no credentials in the config or the chain, the call fails before anything is sent."""
    upstream.reset()
    provider = Bedrock("eu-west-1", base_url=upstream.url)
    try:
        with pytest.raises(AuthenticationFailed, match="found no AWS credentials"):
            await provider.complete(ask(NOVA))
    finally:
        await provider.aclose()
    assert upstream.requests() == []


def _refreshable(minutes: float, refreshed: list[int]) -> RefreshableCredentials:
    """Credentials expiring in `minutes`, whose refresh gives `NEW` keys for an hour."""

    def refresh() -> dict[str, str]:
        refreshed.append(1)
        expiry = datetime.now(UTC) + timedelta(hours=1)
        return {
            "access_key": "NEW",
            "secret_key": "new-secret",
            "token": "new-token",
            "expiry_time": expiry.isoformat(),
        }

    expiry = datetime.now(UTC) + timedelta(minutes=minutes)
    metadata = {
        "access_key": "OLD",
        "secret_key": "old-secret",
        "token": "old-token",
        "expiry_time": expiry.isoformat(),
    }
    return RefreshableCredentials.create_from_metadata(metadata, refresh, "test")


def _signer(source: RefreshableCredentials) -> AwsSigner:
    signer = AwsSigner("us-east-1", provider="bedrock")
    signer._source = source
    signer._frozen = ReadOnlyCredentials("OLD", "old-secret", "old-token")
    return signer


async def test_credentials_near_expiry_refresh_in_the_background() -> None:
    """Inside the advisory window a call signs with the current keys at once and a
    background task refreshes them; the next call signs with the new ones."""
    refreshed: list[int] = []
    signer = _signer(_refreshable(12, refreshed))
    first = await signer.credentials()
    task = signer._refresh
    assert first.access_key == "OLD"
    assert refreshed == []
    assert task is not None
    await task
    assert refreshed == [1]
    assert (await signer.credentials()).access_key == "NEW"
    assert signer._refresh is None


async def test_credentials_about_to_expire_are_refreshed_before_the_call() -> None:
    """Credentials with under a minute left make the call wait for fresh ones."""
    refreshed: list[int] = []
    signer = _signer(_refreshable(0.5, refreshed))
    assert (await signer.credentials()).access_key == "NEW"
    assert refreshed == [1]


def test_config_without_the_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without botocore installed, a bedrock provider fails at load naming `turnout[aws]`;
    the adapter itself refuses the same way."""
    monkeypatch.setitem(sys.modules, "botocore", None)
    config = {
        "providers": [{"name": "aws", "kind": "bedrock", "region": "us-east-1"}],
        "routes": [{"name": "r", "targets": [{"provider": "aws", "model": NOVA}]}],
    }
    with pytest.raises(ConfigError) as caught:
        parse_config(config, env={})
    ((field, rule),) = caught.value.errors
    assert field == "providers[0].kind"
    assert "pip install 'turnout[aws]'" in rule
    with pytest.raises(ConfigError, match=r"turnout\[aws\]"):
        Bedrock("us-east-1")


def test_bedrock_options_belong_to_bedrock() -> None:
    """`region` on another kind, half a key pair or passthrough are refused at load."""
    config = {
        "providers": [
            {"name": "o", "kind": "openai", "api_key": "k", "region": "us-east-1"},
            {"name": "b", "kind": "bedrock", "access_key_id": "AKID"},
            {"name": "c", "kind": "bedrock", "credential_mode": "passthrough"},
        ],
        "routes": [{"name": "r", "targets": [{"provider": "o", "model": "gpt-4o"}]}],
    }
    with pytest.raises(ConfigError) as caught:
        parse_config(config, env={})
    fields = [field for field, _ in caught.value.errors]
    assert fields == [
        "providers[0].region",
        "providers[1].access_key_id",
        "providers[2].credential_mode",
    ]


def _served(*pieces: bytes) -> Answer:
    """A raw server answer: a 200 event stream carrying `pieces`, then the end of the body."""
    head = b"content-type: application/vnd.amazon.eventstream\r\nx-amzn-requestid: rid-1\r\n"
    return answering(chunked(*pieces, head=head))


async def _stream_from(answer: Answer) -> tuple[list[ChatChunk], BaseException | None]:
    """The chunks a bedrock provider streams from a raw server, and what it raised."""
    seen: list[ChatChunk] = []
    async with RawServer(answer) as server:
        provider = Bedrock(
            base_url=server.url(""), access_key_id="AKID", secret_access_key="secret"
        )
        try:
            async for chunk in provider.stream(ask(NOVA)):
                seen.append(chunk)  # noqa: PERF401 - kept one by one until the stream fails
        except ProviderError as exc:
            return seen, exc
        finally:
            await provider.aclose()
    return seen, None


async def test_a_stream_cut_inside_a_frame_before_the_finish_ended_early() -> None:
    """A stream whose body ends inside a frame, before the finish, fails after its text."""
    data = (FIXTURES / "converse_stream.bin").read_bytes()
    frames = EventStreamDecoder().feed(data)
    cut = sum(len(encoded(f)) for f in frames[:3]) + 20
    seen, error = await _stream_from(_served(data[:cut]))
    assert "".join(c.delta for c in seen) == "Checking the weather."
    assert isinstance(error, ProviderUnavailable)
    assert error.reason == "stream ended early"
    assert error.provider_request_id == "rid-1"


async def test_a_stream_cut_after_its_finish_is_whole() -> None:
    """A stream cut inside the metadata frame, after messageStop, is a whole answer."""
    data = (FIXTURES / "converse_stream.bin").read_bytes()
    seen, error = await _stream_from(_served(data[:-30]))
    assert error is None
    assert [c.finish_reason for c in seen if c.finish_reason] == ["tool_calls"]


async def test_an_exception_frame_raises_its_class() -> None:
    """A throttlingException frame in the stream is rate_limited, naming the provider."""
    seen, error = await _stream_from(
        _served((FIXTURES / "converse_stream_throttled.bin").read_bytes())
    )
    assert not any(c.has_content for c in seen)
    assert isinstance(error, RateLimited)
    assert error.error_type == "ThrottlingException"
    assert (error.provider, error.provider_request_id) == ("bedrock", "rid-1")


async def test_broken_framing_is_provider_error() -> None:
    """Bytes that are no event stream fail the call as the provider's fault."""
    seen, error = await _stream_from(_served(b"<html>502 Bad Gateway</html>" * 4))
    assert seen == []
    assert isinstance(error, ProviderUnavailable)
    assert "malformed" in error.message


def encoded(frame: Frame) -> bytes:
    """A decoded frame's bytes again (string headers only, as the fixtures have)."""
    return encode_frame({k: str(v) for k, v in frame.headers.items()}, frame.payload)
