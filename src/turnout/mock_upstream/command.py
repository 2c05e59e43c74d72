"""The `mock-upstream` command line, shared by `turnout mock-upstream` and `python -m
turnout.mock_upstream`: its options, and a help text that ends with the fault grammar.

Light on imports: `turnout` builds this parser on every run, so the server loads only when it
serves.
"""

from __future__ import annotations

import argparse
from typing import Any

from turnout.mock_upstream.faults import GRAMMAR

__all__ = ["DEFAULT_PORT", "HELP", "add_arguments", "parser_options"]

DEFAULT_PORT = 4010

HELP = "an OpenAI + Anthropic + Gemini + Bedrock compatible upstream with scriptable faults"
"""The one-line summary in the `turnout` command list."""

_DESCRIPTION = """\
Serve a mock upstream for tests, demos and benchmarks: OpenAI chat completions, embeddings
and models, Anthropic messages and count_tokens, Gemini generateContent,
streamGenerateContent and batchEmbedContents, Bedrock Converse, ConverseStream, InvokeModel and
InvokeModelWithResponseStream (SigV4-checked), over real sockets. A fault spec (below)
makes a request fail on cue. Control endpoints: GET /_mock/requests (the request log),
GET|POST|DELETE /_mock/scripts, POST /_mock/reset, GET /_mock/health."""


def parser_options() -> dict[str, Any]:
    """Keyword arguments for the command's `ArgumentParser`: description, and the fault grammar
    as epilog, both printed as written."""
    return {
        "description": _DESCRIPTION,
        "epilog": GRAMMAR,
        "formatter_class": argparse.RawDescriptionHelpFormatter,
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's options: `--host`, `--port`, `--hold-limit` (seconds), `--log-limit`,
    `--gemini-key`, `--vertex-token`, `--aws-access-key-id`, `--aws-secret-access-key`."""
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port ({DEFAULT_PORT}; 0 = any free)"
    )
    parser.add_argument(
        "--hold-limit",
        type=float,
        default=300.0,
        help="longest a hang or stall holds a request, seconds (300)",
    )
    parser.add_argument(
        "--log-limit", type=int, default=10_000, help="requests kept in the log (10000)"
    )
    parser.add_argument(
        "--gemini-key",
        default=None,
        help="the test key Gemini requests must send in x-goog-api-key (default: any)",
    )
    parser.add_argument(
        "--vertex-token",
        default=None,
        help="a bearer token Vertex requests may send besides those POST /token issues",
    )
    parser.add_argument(
        "--aws-access-key-id",
        default=None,
        help="the test AWS key id Bedrock requests must be SigV4-signed with (default: any)",
    )
    parser.add_argument(
        "--aws-secret-access-key",
        default=None,
        help="the secret key of --aws-access-key-id (checked by re-signing each request)",
    )
