"""The `turnout` command: parse arguments, call library functions.

Each subcommand is registered by one small function; the work lives in library modules, which
are imported only when their command runs so that `turnout --version` stays instant.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from turnout import __version__

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["build_parser", "main"]

Subparsers = argparse._SubParsersAction  # argparse names no public type for it


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="turnout", description="Route every LLM call over an ordered set of targets."
    )
    parser.add_argument("--version", action="version", version=f"turnout {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="a gateway over failing mock providers, each routing record printed as a table",
        description="Start a gateway in front of a mock upstream that fails on cue and call it "
        "through the official SDKs: a 429 that fails over, a breaker that opens, a stream "
        "(offline, no keys; needs the openai SDK: pip install 'turnout[demo]').",
    )
    demo.add_argument(
        "--library",
        dest="engine_only",
        action="store_true",
        help="the in-process library demo instead: Route over scripted models on a fake clock",
    )
    demo.add_argument(
        "--anthropic",
        action="store_true",
        help="also call /v1/messages through the Anthropic SDK (needs the anthropic package)",
    )
    demo.add_argument(
        "--keep",
        action="store_true",
        help="keep the gateway up afterwards, with its dashboard at /ui, until Ctrl-C",
    )
    from turnout.gateway.commands.catalog import add_catalog_parser  # noqa: PLC0415
    from turnout.gateway.commands.health import add_health_parser  # noqa: PLC0415
    from turnout.gateway.commands.inspect import add_check_parser, add_routes_parser  # noqa: PLC0415
    from turnout.gateway.commands.keys import add_keys_parser  # noqa: PLC0415
    from turnout.gateway.commands.serve import add_serve_parser  # noqa: PLC0415

    add_serve_parser(commands)
    add_check_parser(commands)
    add_routes_parser(commands)
    add_health_parser(commands)
    _add_mock_upstream(commands)
    _add_import(commands)
    add_keys_parser(commands)
    add_catalog_parser(commands)
    return parser


def _add_mock_upstream(commands: Subparsers[argparse.ArgumentParser]) -> None:
    """`turnout mock-upstream [--host H] [--port P] …`; `--help` ends with the fault grammar."""
    from turnout.mock_upstream.command import HELP, add_arguments, parser_options  # noqa: PLC0415

    add_arguments(commands.add_parser("mock-upstream", help=HELP, **parser_options()))


def _add_import(commands: Subparsers[argparse.ArgumentParser]) -> None:
    """`turnout import litellm FILE`: a LiteLLM proxy config as a turnout config.

    What carries over and what does not: `docs/migrating-from-litellm.md`.
    """
    importer = commands.add_parser(
        "import",
        help="convert another gateway's config into a turnout config",
        description="Convert another gateway's configuration; the turnout YAML goes to "
        "standard output, with a comment for every setting that could not be carried.",
    )
    importer.add_argument("source", choices=["litellm"], help="what the file is (litellm)")
    importer.add_argument("file", help="the configuration file to convert")
    from turnout.gateway.commands.control import add_target_arguments  # noqa: PLC0415

    importer.add_argument(
        "--into-store",
        action="store_true",
        help="write the providers, routes, bindings and policies into a project of the store "
        "(with --url or --store; --project is created when missing) instead of printing YAML; "
        "every ${VAR} is read from the "
        "environment now and its value stored (provider keys encrypted): a variable not set "
        "refuses the import. Caller keys and server/state/defaults are not stored",
    )
    importer.add_argument(
        "--replace",
        action="store_true",
        help="with --into-store: update objects whose names the project already uses "
        "(without it, such a clash refuses the import)",
    )
    add_target_arguments(importer)


def _run_import(args: argparse.Namespace) -> int:
    if args.into_store:
        if not (args.url or args.store):
            sys.stderr.write("error: --into-store needs --url (a running gateway) or --store\n")
            return 1
        from turnout.gateway.commands.import_store import main_import_into_store  # noqa: PLC0415

        return main_import_into_store(args)
    if args.url or args.store or args.replace:
        sys.stderr.write("error: --url, --store and --replace go with --into-store\n")
        return 1
    from turnout.config.litellm import main_import_litellm  # noqa: PLC0415

    return main_import_litellm(args.file, sys.stdout)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "demo":
        from turnout.demo import run_demo  # noqa: PLC0415 - keep `turnout --version` light

        return run_demo(library=args.engine_only, anthropic=args.anthropic, keep=args.keep)
    if args.command == "mock-upstream":
        from turnout.mock_upstream.server import run  # noqa: PLC0415 - only when serving

        return run(args)
    if args.command == "import":
        return _run_import(args)
    if args.command == "keys":
        from turnout.gateway.commands.keys import main_keys  # noqa: PLC0415

        return main_keys(args)
    if args.command == "catalog":
        from turnout.gateway.commands.catalog import main_catalog  # noqa: PLC0415

        return main_catalog(args)
    if args.command == "health":
        from turnout.gateway.commands.health import main_health  # noqa: PLC0415

        return main_health(args)
    if args.command in ("serve", "check", "routes"):
        from turnout.gateway.commands import inspect, serve  # noqa: PLC0415

        run = {
            "serve": serve.main_serve,
            "check": inspect.main_check,
            "routes": inspect.main_routes,
        }[args.command]
        return run(args)
    parser.print_help(sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
