"""`turnout health [--url URL] [--admin-key KEY] [--json]`: a running gateway's upstream health
as a table in the terminal.

It reads `GET /admin/v1/health` of the gateway at `--url` (default `http://127.0.0.1:4000`)
with the admin key from `--admin-key` or `TURNOUT_ADMIN_KEY` (the key never appears in the
output, not even in an error). Exit status: 0 when every upstream is healthy, 2 when any is
cooling down, open, probing or parked, 1 when the gateway cannot be asked.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Any, Final, TextIO

from turnout.gateway.commands.control import ADMIN_KEY_VARIABLE

if TYPE_CHECKING:
    import argparse

    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]

__all__ = ["add_health_parser", "format_health", "main_health"]

_DEFAULT_URL: Final = "http://127.0.0.1:4000"
_WORDS: Final = {
    "available": "healthy",
    "cooling_down": "cooling down",
    "open": "breaker open",
    "half_open": "probing",
    "parked": "parked",
}


def add_health_parser(subparsers: Subparsers) -> argparse.ArgumentParser:
    """`turnout health [--url URL] [--admin-key KEY] [--json]`."""
    parser = subparsers.add_parser(
        "health",
        help="a running gateway's upstream health, as a table",
        description="Print each upstream's health on a running gateway: state, failures in a "
        "row and the seconds left on a cooldown, open breaker or park. Exit status 2 when any "
        f"upstream is not healthy. The admin key comes from --admin-key or {ADMIN_KEY_VARIABLE}.",
    )
    parser.add_argument("--url", default=_DEFAULT_URL, help=f"the gateway ({_DEFAULT_URL})")
    parser.add_argument("--admin-key", help=f"an admin key (default: ${ADMIN_KEY_VARIABLE})")
    parser.add_argument("--json", action="store_true", help="print the gateway's JSON as is")
    parser.add_argument(
        "--timeout", type=float, default=5.0, help="seconds to wait for the gateway (5)"
    )
    return parser


def main_health(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run `turnout health`; returns the exit status."""
    out = out if out is not None else sys.stdout
    key = args.admin_key or os.environ.get(ADMIN_KEY_VARIABLE)
    if not key:
        sys.stderr.write(f"error: give an admin key with --admin-key or {ADMIN_KEY_VARIABLE}\n")
        return 1
    url = args.url.rstrip("/") + "/admin/v1/health"
    try:
        body = _fetch(url, key, args.timeout)
    except _Unreachable as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    if args.json:
        out.write(json.dumps(body, indent=2) + "\n")
    else:
        out.write(format_health(body))
    states = [k.get("state") for p in body.get("data", []) for k in p.get("keys", [])]
    return 0 if all(state == "available" for state in states) else 2


class _Unreachable(Exception):
    pass


def _fetch(url: str, key: str, timeout: float) -> dict[str, Any]:
    request = urllib.request.Request(  # noqa: S310 - the operator's own gateway URL
        url, headers={"authorization": f"Bearer {key}", "accept": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:  # noqa: S310
            data = json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        detail = _error_message(exc)
        if exc.code == 401:
            raise _Unreachable(f"{url}: the admin key was refused ({detail})") from None
        raise _Unreachable(f"{url}: HTTP {exc.code} ({detail})") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise _Unreachable(f"cannot reach {url}: {reason}") from None
    if not isinstance(data, dict):
        raise _Unreachable(f"{url}: not a health report")
    return data


def _error_message(exc: urllib.error.HTTPError) -> str:
    try:
        error = json.loads(exc.read()).get("error", {})
    except (ValueError, AttributeError, OSError):
        return exc.reason or "no detail"
    return str(error.get("message") or error.get("code") or "no detail")


def format_health(body: dict[str, Any]) -> str:
    """The health report as a table: one line per upstream, by project."""
    rows = [("PROJECT", "UPSTREAM", "STATE", "FAILURES", "TIME LEFT")]
    for project in body.get("data", []):
        for key in project.get("keys", []):
            left = key.get("seconds_left")
            rows.append(
                (
                    str(project.get("project", "-")),
                    str(key.get("key", "-")),
                    _WORDS.get(str(key.get("state")), str(key.get("state"))),
                    str(key.get("failures", 0)),
                    "" if left is None else f"{float(left):.1f} s",
                )
            )
    if len(rows) == 1:
        return "No upstream has been called yet: health appears with the first call.\n"
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join(line.rstrip() for line in lines) + "\n"
