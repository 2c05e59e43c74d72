"""The `turnout` command: parse arguments, call library functions (SPEC §12)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from turnout import __version__

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="turnout", description="Route every LLM call over an ordered set of targets."
    )
    parser.add_argument("--version", action="version", version=f"turnout {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.add_parser(
        "demo",
        help="routed calls over scripted models, each routing record printed as a table",
        description="Run a few routed calls over scripted models (offline, instant, no keys).",
    )
    _add_mock_upstream(commands)
    return parser


def _add_mock_upstream(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`turnout mock-upstream [--host H] [--port P]` (options: `turnout.mock_upstream`)."""
    upstream = commands.add_parser(
        "mock-upstream",
        help="an OpenAI + Anthropic compatible upstream with scriptable faults",
        description="Serve a mock upstream for tests, demos and benchmarks (faults by model "
        "name or the x-mock-fault header; request log at /_mock/requests).",
    )
    upstream.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    upstream.add_argument("--port", type=int, default=4010, help="port (4010; 0 = any free)")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "demo":
        from turnout.demo import run_demo  # noqa: PLC0415 - keep `turnout --version` light

        run_demo()
        return 0
    if args.command == "mock-upstream":
        from turnout.mock_upstream.server import run  # noqa: PLC0415 - only when serving

        return run(args)
    parser.print_help(sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
