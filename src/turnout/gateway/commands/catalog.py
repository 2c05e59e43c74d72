"""`turnout catalog show MODEL` and `turnout catalog update FILE|URL`: read the model catalog,
and write a newer one where the gateway reads it (`catalog_file`; docs/catalog.md).

`update` checks the whole file before it writes anything: a file of the wrong shape is refused
with every wrong field named by its path, and the catalog in place is kept. The file is written
whole or not at all (a temporary file renamed over it).
"""

from __future__ import annotations

import difflib
import json
import os
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Final, TextIO

from turnout.config.catalog import ModelCatalog, decode_json, load_catalog, parse_catalog
from turnout.errors import ConfigError

if TYPE_CHECKING:
    import argparse

    from turnout.schema import CatalogModel

    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]

__all__ = ["DEFAULT_FILE", "add_catalog_parser", "format_entry", "main_catalog"]

DEFAULT_FILE: Final = "turnout-catalog.json"
"""Where `update` writes without `--to` (in the working directory)."""
_MAX_BYTES: Final = 16 * 1024 * 1024


def add_catalog_parser(subparsers: Subparsers) -> argparse.ArgumentParser:
    """`turnout catalog show MODEL [--catalog FILE] [--json]` and `turnout catalog update
    FILE|URL [--to FILE] [--timeout S]`."""
    parser = subparsers.add_parser(
        "catalog",
        help="the model catalog: prices, context windows and capabilities by model",
        description="Show what the model catalog says of a model, or replace the catalog "
        "file the gateway reads (catalog_file) with a newer one.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    show = actions.add_parser("show", help="print a model's catalog entry")
    show.add_argument("model", help="a model name or alias (a Bedrock or Vertex id too)")
    show.add_argument(
        "--catalog", metavar="FILE", help="a catalog file over the shipped one (catalog_file)"
    )
    show.add_argument("--json", action="store_true", help="print the entry as JSON")
    update = actions.add_parser(
        "update", help="check a catalog file or URL and write it where the gateway reads it"
    )
    update.add_argument("source", help="a JSON catalog file, or an http(s) URL serving one")
    update.add_argument(
        "--to", metavar="FILE", default=DEFAULT_FILE, help=f"where to write it ({DEFAULT_FILE})"
    )
    update.add_argument(
        "--timeout", type=float, default=30.0, help="seconds to wait for a URL (30)"
    )
    return parser


def main_catalog(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run `turnout catalog ACTION`; returns the exit status (1 on any error)."""
    out = out if out is not None else sys.stdout
    try:
        if args.action == "show":
            return _show(args, out)
        return _update(args, out)
    except ConfigError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1


def _show(args: argparse.Namespace, out: TextIO) -> int:
    catalog = load_catalog(args.catalog)
    found = catalog.find(args.model)
    if found is None:
        sys.stderr.write(
            f"error: the model catalog has no model {args.model!r}{_near(catalog, args.model)}\n"
        )
        return 1
    name, entry = found
    if args.json:
        shown = {name: entry.model_dump(mode="json", exclude_none=True)}
        out.write(json.dumps(shown, indent=2) + "\n")
    else:
        out.write(format_entry(name, entry, catalog))
    return 0


def _near(catalog: ModelCatalog, model: str) -> str:
    close = difflib.get_close_matches(model, list(catalog.models), n=3)
    return f" (did you mean {', '.join(close)}?)" if close else ""


def format_entry(name: str, entry: CatalogModel, catalog: ModelCatalog) -> str:
    """`entry` as a few readable lines, titled by its `name` and the catalog's day."""
    prices = entry.prices
    rows = [
        ("aliases", ", ".join(entry.aliases) or "-"),
        ("vendors", ", ".join(entry.vendors) or "any provider"),
        ("prices", "unknown" if prices is None else _prices(prices.model_dump())),
        ("context window", _tokens(entry.context_window)),
        ("max output", _tokens(entry.max_output_tokens)),
        ("capabilities", ", ".join(sorted(entry.capabilities.names())) or "none"),
    ]
    if entry.note:
        rows.append(("note", entry.note))
    lines = [f"{name} (model catalog of {catalog.updated.isoformat()})"]
    lines.extend(f"  {label:<15} {value}" for label, value in rows)
    return "\n".join(lines) + "\n"


def _prices(prices: dict[str, float | None]) -> str:
    shown = [
        f"{key.replace('_', ' ')} {value:g}" for key, value in prices.items() if value is not None
    ]
    return ", ".join(shown) + " (USD per 1M tokens)"


def _tokens(count: int | None) -> str:
    return "unknown" if count is None else f"{count:,} tokens"


def _update(args: argparse.Namespace, out: TextIO) -> int:
    source: str = args.source
    data = decode_json(_fetch(source, args.timeout), source=source)
    catalog = parse_catalog(data, source=source)
    target = Path(args.to)
    _write(target, json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    out.write(
        f"wrote the model catalog of {catalog.updated.isoformat()} "
        f"({len(catalog.models)} models) to {target}\n"
    )
    return 0


def _fetch(source: str, timeout: float) -> bytes:
    """The bytes at `source`: an http(s) URL (GET), else a file's path."""
    if not source.startswith(("http://", "https://")):
        try:
            return Path(source).read_bytes()
        except OSError as exc:
            raise _unreadable(source, exc.strerror or str(exc)) from None
    request = urllib.request.Request(source, headers={"accept": "application/json"})  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:  # noqa: S310
            body: bytes = reply.read(_MAX_BYTES + 1)
    except urllib.error.HTTPError as exc:
        raise _unreadable(source, f"HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        raise _unreadable(source, str(getattr(exc, "reason", exc))) from None
    if len(body) > _MAX_BYTES:
        raise _unreadable(source, f"larger than {_MAX_BYTES:,} bytes")
    return body


def _unreadable(source: str, why: str) -> ConfigError:
    rule = f"cannot be read: {why}"
    return ConfigError(f"{source}: {rule}", [(source, rule)])


def _write(target: Path, text: str) -> None:
    """`text` into `target`, whole or not at all."""
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        Path(temporary).replace(target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
