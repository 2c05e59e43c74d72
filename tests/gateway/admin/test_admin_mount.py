"""What does not need a server: the admin key's audit id, and that the gateway imports the
admin API only when asked."""

from __future__ import annotations

import subprocess
import sys

from tests.gateway.admin._support import ADMIN_KEY
from turnout.gateway.admin.auth import admin_key_id
from turnout.gateway.runtime.admin_keys import admin_key_hashes


def test_the_admin_key_id_is_its_hash_prefix_never_the_key() -> None:
    """`adm_` and the hash's first 12 hex digits; a `sha256:` entry is taken as the hash."""
    (digest,) = admin_key_hashes([ADMIN_KEY])
    assert admin_key_id(digest) == "adm_" + digest.removeprefix("sha256:")[:12]
    assert admin_key_hashes([digest]) == {digest}
    assert ADMIN_KEY not in admin_key_id(digest)


def test_the_gateway_does_not_import_the_admin_api_until_asked() -> None:
    """Importing and building the gateway app leaves the admin API (and its OpenAPI models)
    unimported, so start-up does not pay for it."""
    code = (
        "import sys\n"
        "from turnout.gateway.server.app import GatewayApp\n"
        "from turnout.gateway.commands.serve import main_serve\n"
        "print(any(m.startswith('turnout.gateway.admin') for m in sys.modules))\n"
    )
    found = subprocess.run(  # noqa: S603 - this interpreter, fixed code
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert found.stdout.strip() == "False"
