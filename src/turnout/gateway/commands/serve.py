"""`turnout serve [--config FILE] [--host H] [--port P] [--workers N] [--log-level L]
[--log-format text|json]`: run the gateway."""

from __future__ import annotations

import gc
import os
import sys
from typing import TYPE_CHECKING

from turnout.errors import ConfigError, SecretKeyMissing

if TYPE_CHECKING:
    import argparse

__all__ = ["add_serve_parser", "main_serve"]


def add_serve_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `serve` subcommand to `subparsers`."""
    parser = subparsers.add_parser(
        "serve",
        help="run the gateway (OpenAI and Anthropic compatible HTTP API)",
        description="Serve /v1/chat/completions, /v1/messages, /v1/embeddings and /v1/models "
        "over the routes of a configuration file. Without --config: providers from "
        "OPENAI_API_KEY / ANTHROPIC_API_KEY, else a built-in mock provider (offline).",
    )
    parser.add_argument("--config", metavar="FILE", help="configuration file (YAML)")
    parser.add_argument(
        "--host", help="address to bind (default: the config's server.host, 127.0.0.1)"
    )
    parser.add_argument(
        "--port", type=int, help="port (default: the config's server.port, 4000; 0 = any free)"
    )
    parser.add_argument(
        "--workers", type=int, default=1, help="worker processes (default 1)", metavar="N"
    )
    parser.add_argument(
        "--log-level", choices=("debug", "info", "warning", "error"), default="info",
        help="lowest level logged (default info: one access line per request)",
    )  # fmt: skip
    parser.add_argument(
        "--log-format", choices=("text", "json"), default="text",
        help="log lines as text or as one JSON object per line (default text)",
    )  # fmt: skip


def main_serve(args: argparse.Namespace) -> int:
    """Load the configuration (every error printed, exit 1), then serve until interrupted."""
    # Start-up allocates a great many objects (modules, the config schema, the routes) and
    # frees few: the cyclic collector would walk them again and again for nothing (measured:
    # about a tenth of the start-up CPU). `serve` freezes what was built and re-enables the
    # collector before serving.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _main_serve(args)
    finally:
        if enabled:
            gc.enable()


def _main_serve(args: argparse.Namespace) -> int:
    if args.workers > 1:
        # Before anything imports the Prometheus client, which reads it once.
        from turnout.gateway.observe.workers import prepare_workers  # noqa: PLC0415

        prepare_workers()
    from turnout.gateway.observe.logs import configure_logging  # noqa: PLC0415
    from turnout.gateway.server.serving import ServeOptions, open_control, serve  # noqa: PLC0415

    if args.workers < 1:
        print("error: --workers must be at least 1", file=sys.stderr)
        return 2
    configure_logging(args.log_level, args.log_format)
    options = ServeOptions(args.config, args.host, args.port, args.workers)
    try:
        control = open_control(options.config_path, os.environ)
        control.load()
    except SecretKeyMissing as exc:
        print(f"error: cannot start: {exc}", file=sys.stderr)
        return 1
    except ConfigError as exc:
        source = options.config_path or "the embedded defaults"
        print(f"error: {source}: the configuration is invalid", file=sys.stderr)
        for path, message in exc.errors or (("", str(exc)),):
            print(f"  {path}: {message}" if path else f"  {message}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"error: cannot read {options.config_path}: {exc.strerror}", file=sys.stderr)
        return 1
    return serve(options, control)
