"""`turnout demo`: the gateway demo by default, the library demo with `--library`.

- `turnout demo` (`turnout.demo.gateway`): a gateway on 127.0.0.1 in front of the mock upstream,
  a few calls through the official `openai` SDK that fail over, open a breaker and stream, each
  routing record printed as a table; `--anthropic` adds a call through the `anthropic` SDK.
- `turnout demo --library` (`turnout.demo.in_process`): the same ideas in-process, `Route` over
  scripted models on a fake clock; no extra package.

Both are offline, need no key and print the same text on every run.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import TextIO

__all__ = ["INSTALL_HINT", "run_demo"]

INSTALL_HINT = (
    "install it with: pip install 'turnout[demo]' (or run the in-process library demo, which"
    " needs nothing more: turnout demo --library)"
)


def run_demo(
    out: TextIO | None = None,
    *,
    library: bool = False,
    anthropic: bool = False,
    keep: bool = False,
) -> int:
    """Run the gateway demo (with `anthropic`, plus a call through the Anthropic SDK; with
    `keep`, the gateway and its dashboard stay up until Ctrl-C) or, with `library`, the library
    demo, writing to `out` (default: standard output). Returns the exit status: 1 when a package
    the gateway demo needs is missing (said on standard error)."""
    out = out if out is not None else sys.stdout
    if library:
        from turnout.demo.in_process import run_library_demo  # noqa: PLC0415

        run_library_demo(out)
        return 0
    from turnout.demo.gateway import missing_requirements, run_gateway_demo  # noqa: PLC0415

    missing = missing_requirements(anthropic=anthropic)
    if missing:
        names = " and ".join(missing)
        print(f"error: the gateway demo needs {names} (not installed);", file=sys.stderr)
        print(INSTALL_HINT, file=sys.stderr)
        return 1
    run_gateway_demo(out, anthropic=anthropic, keep=keep)
    return 0
