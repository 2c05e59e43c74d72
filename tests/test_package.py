"""The package's public names: each resolves to the object it names, and importing the package,
or one module of it, loads only what that needs."""

from __future__ import annotations

import subprocess
import sys

import pytest

import turnout
import turnout.store


@pytest.mark.parametrize("package", [turnout, turnout.store])
def test_every_public_name_resolves_and_is_listed(package: object) -> None:
    """Each name of `__all__` resolves to an object defined in its home module; an unknown
    name is an AttributeError; `dir` lists the public names."""
    names = package.__all__  # type: ignore[attr-defined]
    for name in names:
        value = getattr(package, name)
        assert value is not None, name
    assert set(names) <= set(dir(package))
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        getattr(package, "nothing")  # noqa: B009 - the lookup is the test


def test_the_version_is_the_installed_version() -> None:
    """`turnout.__version__` is the version the package was installed with."""
    from importlib.metadata import version

    assert turnout.__version__ == version("turnout")


def test_importing_the_package_loads_neither_the_engine_nor_the_store() -> None:
    """`import turnout` and `import turnout.store.audit_rows` load no routing, wire or database
    module until a public name is used; using one loads its home."""
    script = (
        "import sys, turnout, turnout.store.audit_rows\n"
        "heavy = ('turnout.routing', 'turnout.wire', 'sqlalchemy', 'importlib.metadata')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
        "turnout.Route\n"
        "print('turnout.routing.route' in sys.modules)\n"
    )
    out = subprocess.run(  # noqa: S603 - our own interpreter and script
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert out.stdout.split("\n")[:2] == ["[]", "True"]
