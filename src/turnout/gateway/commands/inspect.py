"""`turnout check [--no-env] FILE` and `turnout routes [--config FILE] [--model M]`.

`check` validates a configuration file with the one validator and builds its routes, printing
every error (`path: message`) and every warning; exit status 1 on any error. `--no-env` reads
no environment variable, so CI can check a file without its secrets. `routes` prints
the routes a configuration serves (or, without `--config`, the embedded defaults) as a table,
fallback routes included, or with `--model` where that model goes; `--json` prints the same
for scripts.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any, TextIO

from turnout.errors import ConfigError, RoutingError
from turnout.gateway.runtime.describe import caller_named, resolution_row, route_row

if TYPE_CHECKING:
    import argparse

    from turnout.access.keys import Caller
    from turnout.gateway.runtime.live import Runtime

    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]

__all__ = ["add_check_parser", "add_routes_parser", "main_check", "main_routes"]

_ENDPOINTS = ("chat", "messages", "embeddings", "count_tokens")
_SUGGESTS_CROSS_PROVIDER = "does not set allow_cross_provider"
_CROSS_PROVIDER_NOTE = (
    "note: allow_cross_provider: true lets a route serve a client from targets of another"
    " provider family (each with its own key and a model mapping); a request keeps to one"
    " family and crosses only when that family has no target left that can serve it\n"
)


def add_check_parser(subparsers: Subparsers) -> argparse.ArgumentParser:
    """`turnout check [--no-env] FILE`."""
    parser = subparsers.add_parser(
        "check",
        help="validate a configuration file and print every error",
        description="Validate a configuration file: every error with its path, then the "
        "warnings. Exit status 1 on any error. With --no-env, no environment variable is "
        "read, so a file can be checked without its secrets (in CI, say).",
    )
    parser.add_argument("file", help="the configuration file (YAML or JSON)")
    parser.add_argument(
        "--no-env",
        action="store_true",
        help="read no environment variable: each ${VAR} is left as it is, set or not, and is "
        "not an error; a value holding one is not checked, everything else is",
    )
    return parser


def add_routes_parser(subparsers: Subparsers) -> argparse.ArgumentParser:
    """`turnout routes [--config FILE] [--model M] [--endpoint E] [--key K] [--json]`."""
    parser = subparsers.add_parser(
        "routes",
        help="show the routes served, or where a model goes",
        description="Show the routes a configuration serves (the embedded defaults without "
        "--config), or with --model where that model goes.",
    )
    parser.add_argument("--config", metavar="FILE", help="the configuration file")
    parser.add_argument("--model", metavar="M", help="show where model M goes")
    parser.add_argument(
        "--endpoint", choices=_ENDPOINTS, default="chat", help="the endpoint asked (chat)"
    )
    parser.add_argument(
        "--key", metavar="K", help="apply the ceilings of this key (its name or the key itself)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON for scripts")
    return parser


# ---- check ----------------------------------------------------------------------------------


def main_check(args: argparse.Namespace) -> int:
    """Run `turnout check`; returns the exit status (1 on any error)."""
    # Imported when run, not with the module: the command line builds every subcommand's
    # parser, and `turnout serve` loads these itself (see `main_serve`).
    from turnout.config.load import load_config  # noqa: PLC0415
    from turnout.config.rules import check_config_warnings  # noqa: PLC0415
    from turnout.gateway.resolution.lookups import build_runtime  # noqa: PLC0415

    out = sys.stdout
    read_env = not args.no_env
    if not read_env:
        out.write(f"note: {_NO_ENV}\n")
    try:
        config = load_config(args.file, read_env=read_env)
    except ConfigError as exc:
        return _print_errors(out, args.file, exc)
    try:
        warnings = build_runtime(config).warnings
    except ConfigError as exc:
        if read_env:
            return _print_errors(out, args.file, exc)
        # The loader accepted the file, so only values that stand for unread variables fail
        # here (`state: ${REDIS_URL}`): the runtime needs their real values, the rules do not.
        warnings = tuple(f"{path}: {text}" for path, text in check_config_warnings(config))
    for warning in warnings:
        out.write(f"warning: {warning}\n")
    if any(_SUGGESTS_CROSS_PROVIDER in warning for warning in warnings):
        out.write(_CROSS_PROVIDER_NOTE)
    providers, routes = len(config.providers), len(config.routes)
    out.write(f"ok: {_count(providers, 'provider')}, {_count(routes, 'route')}\n")
    return 0


_NO_ENV = (
    "environment variables were not read (--no-env): each ${VAR} stands for a value that "
    "was not checked"
)


def _print_errors(out: TextIO, file: str, exc: ConfigError) -> int:
    problems = exc.errors or (("(file)", str(exc)),)
    for path, message in problems:
        out.write(f"{path}: {message}\n")
    count = len(problems)
    out.write(f"{file}: {count} error{'' if count == 1 else 's'}\n")
    return 1


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


# ---- routes ---------------------------------------------------------------------------------


def main_routes(args: argparse.Namespace) -> int:
    """Run `turnout routes`; returns the exit status (1 when the model has no route or the
    configuration is invalid)."""
    from turnout.config.load import load_config  # noqa: PLC0415 - see main_check
    from turnout.gateway.resolution.lookups import build_runtime, embedded_runtime  # noqa: PLC0415

    out = sys.stdout
    try:
        if args.config:
            runtime = build_runtime(load_config(args.config))
        else:
            runtime = embedded_runtime(os.environ)
    except ConfigError as exc:
        for path, message in exc.errors or (("(file)", str(exc)),):
            out.write(f"{path}: {message}\n")
        return 1
    try:
        caller = caller_named(runtime, args.key) if args.key else None
    except LookupError as exc:
        out.write(f"{exc}\n")
        return 1
    if args.model is None:
        _print_routes(out, runtime, as_json=args.json)
        return 0
    return _print_resolution(out, runtime, args.model, args.endpoint, caller, as_json=args.json)


def _target_text(row: dict[str, Any]) -> str:
    text = f"{row['provider']}:{row['model'] or '(requested model)'}"
    if row["name"] not in (text, row["provider"], f"{row['provider']}:{row['model']}"):
        text += f" [target {row['name']}]"
    if row["fallback_only"]:
        text += " (fallback only)"
    if row["paused"]:
        text += " (paused)"
    return text


def _fallbacks_text(fallbacks: dict[str, list[str]]) -> str:
    """`general: backup; context: long-context`, or `-` without fallbacks."""
    kinds = [f"{kind}: {', '.join(names)}" for kind, names in fallbacks.items() if names]
    return "; ".join(kinds) or "-"


def _print_routes(out: TextIO, runtime: Runtime, *, as_json: bool) -> None:
    rows = [route_row(entry) for entry in runtime.routes.values()]
    disabled = [route.name for route in runtime.config.routes if not route.enabled]
    if as_json:
        out.write(json.dumps({"routes": rows, "disabled": disabled}, indent=2) + "\n")
        return
    table = [("ROUTE", "KIND", "STRATEGY", "SERVES", "FALLBACKS", "TARGETS (TRY ORDER)")]
    for row in rows:
        serves = ", ".join(row["patterns"]) or "-"
        if row["aliases"]:
            serves += f"; aliases: {', '.join(row['aliases'])}"
        targets = "  ".join(
            f"{n}. {_target_text(t)}" for n, t in enumerate(row["targets"], start=1)
        )
        fallbacks = _fallbacks_text(row["fallbacks"])
        table.append((row["name"], row["kind"], row["strategy"], serves, fallbacks, targets))
    table.extend((name, "disabled", "-", "-", "-", "-") for name in disabled)
    widths = [max(len(line[i]) for line in table) for i in range(5)]
    for line in table:
        cells = [cell.ljust(width) for cell, width in zip(line, widths, strict=False)]
        out.write("  ".join([*cells, line[5]]).rstrip() + "\n")


def _print_resolution(
    out: TextIO,
    runtime: Runtime,
    model: str,
    endpoint: Any,
    caller: Caller | None,
    *,
    as_json: bool,
) -> int:
    try:
        found = runtime.resolve(model, endpoint=endpoint, caller=caller)
    except RoutingError as exc:
        if as_json:
            error = {"status": exc.status, "code": exc.code, "message": exc.message}
            out.write(json.dumps({"model": model, "endpoint": endpoint, "error": error}) + "\n")
        else:
            out.write(f"{exc.status} {exc.code}: {exc.message}\n")
        return 1
    row = resolution_row(found, endpoint)
    if as_json:
        out.write(json.dumps(row, indent=2) + "\n")
        return 0
    how = found.matched_by.replace("_", " ")
    if found.pattern is not None:
        how += f" (model pattern {found.pattern})"
    out.write(f'model "{model}" goes to route "{found.entry.name}" ({found.entry.kind})\n')
    out.write(f"matched by: {how}\nstrategy: {row['strategy']}\ntry order:\n")
    for number, target in enumerate(row["targets"], start=1):
        out.write(f"  {number}. {_target_text(target)}\n")
    if any(row["fallbacks"].values()):
        out.write(f"fallback routes: {_fallbacks_text(row['fallbacks'])}\n")
    return 0
