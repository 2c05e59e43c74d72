"""The model catalog: list prices, context windows, largest answers and capabilities by model
name, shipped with turnout (`catalog.json` beside this module) and overridable, model by model,
by a catalog file of the same shape (`catalog_file`, written by `turnout catalog update`), then
per provider (a provider's `catalog` and `prices`). See docs/catalog.md.

Rule 1: a model is found by its name or one of its aliases, ignoring case; a Bedrock ARN by its
last part, a Bedrock inference profile (`us.anthropic.…`) by the model id after its region, a
Gemini name also without its `models/` prefix.
Rule 2: an entry that lists `vendors` is only for providers of those kinds or presets; the
built-in `mock` kind is never priced or limited from the catalog.
Rule 3: a catalog file's entry replaces the shipped entry of the same name whole, aliases
included; a name is either an entry's own or one alias of one entry, never two.
"""

from __future__ import annotations

import functools
import json
import re
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from pydantic import ValidationError

from turnout.config._shape import describe_errors
from turnout.errors import ConfigError
from turnout.routing.model_info import ModelInfo, ModelPrice
from turnout.schema import CatalogFile, CatalogModel, CatalogOverride

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping

    from turnout.schema import ProviderConfig

__all__ = [
    "ModelCatalog",
    "load_catalog",
    "model_info",
    "parse_catalog",
    "provider_vendor",
    "read_catalog",
    "shipped_catalog",
]

_SHIPPED: Final = "catalog.json"
_REGION = re.compile(r"^[a-z]{2,8}\.(?=[a-z0-9-]+\.)")


def parse_catalog(data: object, *, source: str = "catalog") -> CatalogFile:
    """`data` (decoded JSON) as a catalog, or `ConfigError` naming each wrong field by its path
    (`models.gpt-4o.prices.input: Input should be a valid number`)."""
    try:
        catalog = CatalogFile.model_validate(data)
    except ValidationError as exc:
        problems = describe_errors(exc.errors())
        raise _refused(source, problems) from None
    clashes = _clashes(catalog.models)
    if clashes:
        raise _refused(source, clashes)
    return catalog


def _refused(source: str, problems: list[tuple[str, str]]) -> ConfigError:
    lines = "\n".join(f"  {path}: {message}" for path, message in problems)
    return ConfigError(f"{source}: not a model catalog ({len(problems)}):\n{lines}", problems)


def _clashes(models: Mapping[str, CatalogModel]) -> list[tuple[str, str]]:
    """Rule 3: every name used by two entries, at the path of the later one."""
    owner: dict[str, str] = {name.lower(): name for name in models}
    problems = []
    for name, entry in models.items():
        for index, alias in enumerate(entry.aliases):
            held = owner.setdefault(alias.lower(), name)
            if held != name:
                where = f"models.{name}.aliases[{index}]"
                problems.append((where, f"{alias!r} already names the model {held!r}"))
    return problems


def read_catalog(path: str | Path) -> CatalogFile:
    """The catalog file at `path`, or `ConfigError` saying why it is not one."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        rule = f"cannot be read: {exc.strerror if isinstance(exc, OSError) else exc}"
        raise ConfigError(f"{file}: {rule}", [(str(file), rule)]) from None
    return parse_catalog(decode_json(text, source=str(file)), source=str(file))


def decode_json(text: str | bytes, *, source: str) -> Any:
    """`text` as JSON, or `ConfigError` naming where it broke."""
    try:
        return json.loads(text)
    except ValueError as exc:
        rule = f"is not JSON: {exc}"
        raise ConfigError(f"{source}: {rule}", [(source, rule)]) from None


@functools.cache
def shipped_catalog() -> CatalogFile:
    """The catalog shipped with turnout (read once)."""
    text = resources.files(__package__ or "turnout.config").joinpath(_SHIPPED).read_text("utf-8")
    return parse_catalog(json.loads(text), source="the shipped catalog")


class ModelCatalog:
    """The shipped catalog with a catalog file's entries over it (Rule 3): `models` by name,
    `updated` the day of the newest of them, and `find` (Rule 1)."""

    __slots__ = ("_index", "models", "updated")

    def __init__(self, shipped: CatalogFile, over: CatalogFile | None = None) -> None:
        merged = dict(shipped.models)
        self.updated = shipped.updated
        if over is not None:
            merged.update(over.models)
            self.updated = max(self.updated, over.updated)
        self.models: Mapping[str, CatalogModel] = MappingProxyType(merged)
        index: dict[str, str] = {}
        for name, entry in merged.items():
            index.update((alias.lower(), name) for alias in entry.aliases)
        index.update((name.lower(), name) for name in merged)
        self._index = index

    def find(self, model: str) -> tuple[str, CatalogModel] | None:
        """The entry `model` names (Rule 1) with its own name, or None."""
        for name in _forms(model):
            found = self._index.get(name)
            if found is not None:
                return found, self.models[found]
        return None

    def for_provider(self, provider: ProviderConfig) -> Callable[[str], ModelInfo | None] | None:
        """What `provider` asks the catalog (Rule 2), with its own `catalog` overrides; None
        for a `mock` provider."""
        if provider.kind == "mock":
            return None
        vendor = provider_vendor(provider)
        overrides = {name.lower(): value for name, value in provider.catalog.items()}

        def lookup(model: str) -> ModelInfo | None:
            found = self.find(model)
            entry = None if found is None or not _serves(found[1], vendor) else found[1]
            override = overrides.get(model.lower())
            if entry is None and override is None:
                return None
            return model_info(entry, override)

        return lookup


def _forms(model: str) -> Iterator[str]:
    """Rule 1: the names `model` may be found by, in order."""
    name = model.strip().lower()
    yield name
    if name.startswith("arn:"):
        name = name.rsplit("/", 1)[-1]
        yield name
    if name.startswith("models/"):
        yield name.removeprefix("models/")
    bare = _REGION.sub("", name, count=1)
    if bare != name:
        yield bare


def _serves(entry: CatalogModel, vendor: str) -> bool:
    return not entry.vendors or vendor in entry.vendors


def provider_vendor(provider: ProviderConfig) -> str:
    """The name a catalog entry's `vendors` lists `provider` by: its preset, else its kind."""
    return provider.preset or provider.kind


def model_info(entry: CatalogModel | None, override: CatalogOverride | None = None) -> ModelInfo:
    """The engine's view of a catalog `entry` with a provider's `override` over it."""
    prices = None if entry is None else entry.prices
    price = (
        None
        if prices is None
        else ModelPrice(
            prices.input, prices.output, prices.cache_read, prices.cache_write, source="catalog"
        )
    )
    window = None if entry is None else entry.context_window
    largest = None if entry is None else entry.max_output_tokens
    capabilities = None if entry is None else entry.capabilities
    if override is not None:
        window = override.context_window or window
        largest = override.max_output_tokens or largest
        capabilities = override.capabilities or capabilities
    names = frozenset() if capabilities is None else capabilities.names()
    return ModelInfo(price, window, largest, names)


def load_catalog(path: str | Path | None) -> ModelCatalog:
    """The shipped catalog with the catalog file at `path` over it (None: the shipped one
    alone). Raises `ConfigError` for a file that cannot be read or has a wrong shape.

    Every project's runtime is built with the catalog, at start and at each change: the
    merged catalog is made once per file version (its path, modification time and size), so
    an unchanged file is not read and checked again, and a changed one is."""
    if path is None:
        return _merged(None, 0, 0)
    file = Path(path)
    try:
        found = file.stat()
    except OSError:
        return ModelCatalog(shipped_catalog(), read_catalog(file))  # says why it cannot be read
    return _merged(str(file.resolve()), found.st_mtime_ns, found.st_size)


@functools.lru_cache(maxsize=16)
def _merged(path: str | None, mtime_ns: int, size: int) -> ModelCatalog:
    """`load_catalog` for one version of the file at `path` (None: no file)."""
    del mtime_ns, size  # part of the cache key only
    return ModelCatalog(shipped_catalog(), None if path is None else read_catalog(path))
