"""The configuration file's shape: frozen pydantic models, one per object.

Shape rules live here (types, ranges, enumerations, unknown keys); rules that relate objects to
one another (a target's provider exists, pattern overlaps, fallback cycles, the static attempt
budget) live in `turnout.config.rules`, so that the file and the admin API share both.

Every model forbids unknown keys (the loader turns that into "unknown key … did you mean …")
and accepts AIControls' camelCase spellings as aliases (`failureThreshold`, `fallbackOnly` …).
"""

from __future__ import annotations

from pydantic import Field

from turnout.schema._access import (
    BindingConfig,
    ConsumerConfig,
    GrantConfig,
    KeyConfig,
    PolicyConfig,
    RequireConfig,
    SubjectConfig,
)
from turnout.schema._base import Model
from turnout.schema._catalog import (
    CatalogCapabilities,
    CatalogFile,
    CatalogModel,
    CatalogOverride,
    CatalogPrices,
)
from turnout.schema._providers import DataHandling, Price, ProviderConfig
from turnout.schema._routes import CacheConfig, FallbacksConfig, RouteConfig, TargetConfig
from turnout.schema._server import BreakerConfig, DefaultsConfig, ServerConfig, TracingConfig

__all__ = [
    "BindingConfig",
    "BreakerConfig",
    "CacheConfig",
    "CatalogCapabilities",
    "CatalogFile",
    "CatalogModel",
    "CatalogOverride",
    "CatalogPrices",
    "ConsumerConfig",
    "DataHandling",
    "DefaultsConfig",
    "FallbacksConfig",
    "FileConfig",
    "GrantConfig",
    "KeyConfig",
    "PolicyConfig",
    "Price",
    "ProviderConfig",
    "RequireConfig",
    "RouteConfig",
    "ServerConfig",
    "SubjectConfig",
    "TargetConfig",
    "TracingConfig",
]


class FileConfig(Model):
    """The whole configuration file."""

    project: str = Field("default", description="The project every object of the file belongs to.")
    server: ServerConfig = Field(ServerConfig(), description="The gateway's listener and auth.")
    store: str = Field(
        "sqlite:///turnout.db",
        description="The database of the control plane (projects and what the admin API "
        "stores, audit and usage): `sqlite:///PATH` (default `turnout.db`; a relative path is "
        "beside this file, or in the working directory when `turnout serve` runs without a "
        "file) or a `postgresql://` URL for several replicas. `turnout serve` migrates it on "
        "start.",
    )
    state: str = Field(
        "memory",
        description="Shared state (session pins, response cache, health): `memory`, or a "
        "`redis://` or `rediss://` URL to share it between replicas.",
    )
    admin_keys: tuple[str, ...] = Field(
        (),
        description="Keys for the admin API (`/admin/v1`), each the key itself (usually "
        '`"${ADMIN_KEY}"`) or its hash (`sha256:` and 64 hex digits). Empty: every admin '
        "request is refused.",
    )
    defaults: DefaultsConfig = Field(
        DefaultsConfig(), description="Settings shared by every route."
    )
    audit_retention_days: int = Field(
        30,
        ge=1,
        le=36_500,
        description="Days the store keeps the request audit (one row per routed request and "
        "per attempt entry); older rows are deleted about hourly. The usage ledger is kept.",
    )
    audit_spill_dir: str | None = Field(
        None,
        description="The folder where each `turnout serve` process keeps the usage the store "
        "could not take (while it is down), written to the store when it answers again or at "
        "the next start. A relative path is beside this file (or in the working directory "
        "without a file). Default: beside an SQLite store file, `<file>-spill` "
        "(`turnout.db-spill`); otherwise `turnout-spill` beside this file. Several workers and "
        "replicas on one machine may share it.",
    )
    catalog_file: str | None = Field(
        None,
        description="A model catalog (JSON, as `turnout catalog update` writes it) read over "
        "the one shipped with turnout, model by model, each time the configuration is built. "
        "A relative path is beside this file (or in the working directory without a file). "
        "Null: the shipped catalog alone.",
    )
    providers: tuple[ProviderConfig, ...] = Field((), description="The providers.")
    routes: tuple[RouteConfig, ...] = Field((), description="The routes.")
    keys: tuple[KeyConfig, ...] = Field(
        (), description="Caller keys, checked when `server.auth` is `keys`."
    )
    bindings: tuple[BindingConfig, ...] = Field(
        (), description="Access bindings: who may use which models, through which route."
    )
    policies: tuple[PolicyConfig, ...] = Field(
        (), description="Routing policies, checked for every target before it is called."
    )
    consumers: tuple[ConsumerConfig, ...] = Field(
        (),
        description="Not supported yet: stored callers with an assignment, which the gateway "
        "does not read yet. A file that sets it is refused.",
    )
