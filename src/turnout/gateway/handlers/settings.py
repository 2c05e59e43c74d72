"""What the handlers know of the gateway beyond one request's exchange: the settings every
request of one gateway shares, and `ServedExchange`, the exchange with the caller's runtime.

The server builds the settings and makes exchanges that are `ServedExchange`s; a handler reads
both through this module and never through the server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from turnout.access.keys import Caller
from turnout.gateway.exchange import Exchange
from turnout.gateway.observe.observer import Observer
from turnout.gateway.runtime.served import ServedProjects

if TYPE_CHECKING:
    from turnout.access.keys import Credentials
    from turnout.gateway.runtime.live import Runtime

__all__ = ["GatewaySettings", "ServedExchange"]


class GatewaySettings:
    """What every request of one gateway shares: the served projects and the HTTP options.

    `served` is a `ServedProjects` (or one `Runtime`, served alone); `runtime` is its primary
    runtime (the config file's project), whose server settings are the gateway's; `keys` the
    key ring across every project (None under `auth: open`).

    `max_body_bytes` (default: the config's `server.max_body_bytes`, 32 MiB) bounds a request
    body; `keepalive_seconds` (15) spaces the `: keep-alive` comments of a stream whose route
    has `commit_on_headers`; `observer` (default: a new `Observer`) logs and counts each
    request and the runtime's health transitions.
    """

    __slots__ = (
        "anonymous",
        "keepalive_seconds",
        "keys",
        "max_body_bytes",
        "observer",
        "runtime",
        "served",
    )

    def __init__(
        self,
        runtime: Runtime | ServedProjects,
        *,
        max_body_bytes: int | None = None,
        keepalive_seconds: float = 15.0,
        observer: Observer | None = None,
    ) -> None:
        served = runtime if isinstance(runtime, ServedProjects) else ServedProjects.of(runtime)
        self.served = served
        runtime = self.runtime = served.primary
        self.keys = served.keys
        self.observer = observer if observer is not None else Observer()
        for each in served.runtimes.values():
            self.observer.watch(each.health)
        self.max_body_bytes = (
            max_body_bytes if max_body_bytes is not None else runtime.config.server.max_body_bytes
        )
        self.keepalive_seconds = keepalive_seconds
        self.anonymous = Caller.anonymous(runtime.project)


class ServedExchange(Exchange, Protocol):
    """An exchange of this gateway as a handler sees it: the request (`Exchange`) with its
    `method` and `path`, the caller, the gateway's `settings` and the `runtime` of the
    caller's project (with several projects, the caller is authenticated first)."""

    @property
    def method(self) -> str:
        """The request's method (`GET`, `POST` ...)."""
        ...

    @property
    def path(self) -> str:
        """The request's path, without its query."""
        ...

    def caller(self) -> Caller:
        """Who is calling (a missing or unknown key raises `InvalidApiKey`)."""
        ...

    def credentials(self) -> Credentials:
        """What the request's headers say about its caller."""
        ...

    def key_name(self) -> str | None:
        """The name of the key the request is logged and audited under (never the key)."""
        ...

    def reply_id(self) -> str:
        """The id a response without a routing record carries."""
        ...

    @property
    def settings(self) -> GatewaySettings:
        """What every request of the gateway shares."""
        ...

    @property
    def runtime(self) -> Runtime:
        """The runtime of the caller's project."""
        ...
