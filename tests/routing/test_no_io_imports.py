"""The engine (turnout.routing) imports no I/O package: h11's discipline."""

from __future__ import annotations

import ast
import pkgutil
from pathlib import Path

import turnout.routing

FORBIDDEN = frozenset(
    {
        "httpx",
        "httpcore",
        "aiohttp",
        "requests",
        "urllib3",
        "redis",
        "sqlalchemy",
        "alembic",
        "asyncpg",
        "psycopg",
        "psycopg2",
        "aiosqlite",
        "sqlite3",
        "socket",
        "ssl",
        "uvicorn",
        "starlette",
        "fastapi",
        "http",
        "urllib",
        "websockets",
        "grpc",
        "openai",
        "anthropic",
        "subprocess",
        "turnout.gateway",
        "turnout.store",
        "turnout.state",
        "turnout.admin",
        "turnout.providers",
    }
)


def imported_modules(source: str) -> set[str]:
    """Every module an AST imports (absolute names; relative imports are inside the package)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def is_forbidden(module: str) -> bool:
    """True when `module` is a forbidden package or inside one."""
    return any(module == bad or module.startswith(bad + ".") for bad in FORBIDDEN)


def routing_sources() -> list[Path]:
    """The source file of every module of turnout.routing."""
    root = Path(turnout.routing.__file__).parent
    files = [root / "__init__.py"]
    files += [root / f"{info.name}.py" for info in pkgutil.iter_modules([str(root)])]
    return [path for path in files if path.exists()]


def test_the_checker_catches_a_forbidden_import() -> None:
    """The AST check flags `import httpx` and `from redis.asyncio import Redis`."""
    found = imported_modules("import httpx\nfrom redis.asyncio import Redis\nimport asyncio\n")
    assert sorted(m for m in found if is_forbidden(m)) == ["httpx", "redis.asyncio"]


def test_no_routing_module_imports_an_io_package() -> None:
    """No module of turnout.routing imports an HTTP, database, cache or server package."""
    sources = routing_sources()
    assert len(sources) > 10
    offenders = {
        path.name: sorted(m for m in imported_modules(path.read_text()) if is_forbidden(m))
        for path in sources
    }
    assert {name: found for name, found in offenders.items() if found} == {}
