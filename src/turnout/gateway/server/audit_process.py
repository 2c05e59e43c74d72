"""The audit writer process of a serving process (`python -m
turnout.gateway.server.audit_process`): the store's `audit_child`, logging as the serving
process does (the log level and format it inherited)."""

from __future__ import annotations

from turnout.gateway.observe.logs import configure_logging_from_env
from turnout.store.audit_child import main

__all__ = ["run"]


def run() -> None:
    """Configure logging as the parent did, then run the audit child."""
    configure_logging_from_env()
    main()


if __name__ == "__main__":
    run()
