"""`turnout keys create|list|revoke`: caller keys, in a config file's form or in the store.

Rule 1: without `--url` or `--store`, `keys create` only prints a new key and the hash to put
in a config file's `keys`; nothing is stored anywhere.
Rule 2: with `--url` (a running gateway's admin API) or `--store` (a store opened directly),
the key is created, listed or revoked in a project (`--project`, by name or id; default the
project named `default`). A created key's plaintext is printed once, with its id; a listing
never shows a key or a hash.
Rule 3: `revoke` takes a key's id or name; revoking a revoked key is no error (exit 0, the
first revocation time kept); a key the project does not have is exit 1, naming it.
Rule 4: every failure is exit 1 with a message on standard error naming what was wrong; the
admin key never appears in the output.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, TextIO

from turnout.gateway.commands.control import (
    ControlError,
    add_target_arguments,
    open_control,
    require_project,
)

if TYPE_CHECKING:
    import argparse

    from turnout.gateway.commands.control import ControlPlane

    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]

__all__ = ["add_keys_parser", "format_keys", "main_keys"]

_WHERE = (
    "With --url (a running gateway's admin API, admin key from --admin-key or "
    "TURNOUT_ADMIN_KEY) or --store (sqlite:///PATH or postgresql://…, opened directly) the key "
    "lives in a project (--project, by name or id; default: the project named 'default')."
)


def add_keys_parser(subparsers: Subparsers) -> argparse.ArgumentParser:
    """`turnout keys create|list|revoke …`."""
    keys = subparsers.add_parser(
        "keys",
        help="create, list and revoke caller keys",
        description="Caller keys. Without --url or --store, `keys create` prints a new key "
        "and the hash to store in the config file's keys (a stored hash never reveals the "
        f"key). {_WHERE}",
    )
    actions = keys.add_subparsers(dest="action", metavar="ACTION", required=True)
    create = actions.add_parser(
        "create",
        help="a new key, printed once",
        description="Create a caller key: its plaintext is printed once, never again. "
        f"Without --url or --store: the key and the hash for a config file. {_WHERE}",
    )
    create.add_argument("--name", help="the key's name (app for a config file entry)")
    create.add_argument("--user", help="the user the key speaks for")
    create.add_argument(
        "--team", dest="teams", action="append", default=[], help="a team (repeat for more)"
    )
    create.add_argument(
        "--route",
        dest="routes",
        action="append",
        default=[],
        help="a route the key may call (repeat; none: every route)",
    )
    create.add_argument(
        "--allowed-model",
        dest="allowed_models",
        action="append",
        default=[],
        metavar="PATTERN",
        help="a model pattern the key may ask for (repeat; none: any model)",
    )
    create.add_argument("--json", action="store_true", help="print JSON for scripts")
    add_target_arguments(create)
    listing = actions.add_parser(
        "list",
        help="the project's keys (never a key or a hash)",
        description=f"List a project's keys: id, name, prefix, identity, created, revoked. "
        f"{_WHERE}",
    )
    listing.add_argument("--json", action="store_true", help="print JSON for scripts")
    add_target_arguments(listing)
    revoke = actions.add_parser(
        "revoke",
        help="revoke a key by id or name",
        description="Revoke a key: the gateway refuses it from its next configuration on. "
        f"Revoking a revoked key is no error. {_WHERE}",
    )
    revoke.add_argument("key", metavar="KEY_ID_OR_NAME", help="the key's id or name")
    revoke.add_argument("--json", action="store_true", help="print JSON for scripts")
    add_target_arguments(revoke)
    return keys


def main_keys(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run `turnout keys …`; returns the exit status."""
    out = out if out is not None else sys.stdout
    if not (args.url or args.store):
        if args.action == "create":
            return _config_entry(args, out)
        sys.stderr.write(
            f"error: keys {args.action} needs --url (a running gateway) or --store (a store URL)\n"
        )
        return 1
    try:
        control = open_control(args)
        try:
            return _run(control, args, out)
        finally:
            control.close()
    except ControlError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1


def _run(control: ControlPlane, args: argparse.Namespace, out: TextIO) -> int:
    project = require_project(control, args.project)
    pid = project["id"]
    if args.action == "create":
        return _create(control, pid, args, out)
    if args.action == "list":
        keys = control.list("keys", pid)
        out.write(json.dumps(keys, indent=2) + "\n" if args.json else format_keys(keys))
        return 0
    return _revoke(control, project, args, out)


def _create(control: ControlPlane, pid: str, args: argparse.Namespace, out: TextIO) -> int:
    if not args.name:
        raise ControlError("keys create: --name is required with --url or --store")
    body: dict[str, Any] = {"name": args.name, **_identity_fields(args)}
    created = control.create("keys", pid, body)
    if args.json:
        out.write(json.dumps(created) + "\n")
        return 0
    out.write(
        f"key:  {created['key']}\n"
        "      (shown once: give it to the caller; turnout keeps only its hash)\n"
        f"id:   {created['id']}\n"
        f"name: {created['name']}\n"
    )
    return 0


def _revoke(
    control: ControlPlane, project: dict[str, Any], args: argparse.Namespace, out: TextIO
) -> int:
    keys = control.list("keys", project["id"])
    found = [k for k in keys if k["id"] == args.key] or [k for k in keys if k["name"] == args.key]
    if not found:
        raise ControlError(
            f"no key with the id or name {args.key!r} in project {project['name']!r}"
        )
    if len(found) > 1:
        ids = ", ".join(k["id"] for k in found)
        raise ControlError(f"several keys are named {args.key!r} ({ids}): revoke one by its id")
    was = found[0].get("revoked_at")
    revoked = control.revoke_key(project["id"], found[0]["id"])
    if args.json:
        out.write(json.dumps(revoked) + "\n")
    elif was:
        out.write(f"key {revoked['name']} ({revoked['id']}) was already revoked at {was}\n")
    else:
        out.write(f"revoked key {revoked['name']} ({revoked['id']})\n")
    return 0


def _identity(key: dict[str, Any]) -> str:
    parts = []
    if key.get("user"):
        parts.append(f"user={key['user']}")
    for field, label in (("teams", "teams"), ("groups", "groups"), ("routes", "routes"),
                         ("allowed_models", "models")):  # fmt: skip
        if key.get(field):
            parts.append(f"{label}={','.join(key[field])}")
    if key.get("agent"):
        parts.append(f"agent={key['agent']}")
    if key.get("workload"):
        parts.append(f"workload={key['workload']}")
    return " ".join(parts) or "-"


def format_keys(keys: list[dict[str, Any]]) -> str:
    """The keys as a table: id, name, prefix, identity, created, revoked."""
    if not keys:
        return "No keys in this project.\n"
    rows = [("ID", "NAME", "PREFIX", "IDENTITY", "CREATED", "REVOKED")]
    rows += [
        (
            str(key["id"]),
            str(key["name"]),
            str(key.get("prefix") or "-"),
            _identity(key),
            str(key.get("created_at") or "-")[:19],
            str(key.get("revoked_at") or "-")[:19],
        )
        for key in keys
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join(line.rstrip() for line in lines) + "\n"


def _config_entry(args: argparse.Namespace, out: TextIO) -> int:
    """Rule 1: a new key and its config file entry, with the identity given."""
    from turnout.access.keys import generate_key, hash_key  # noqa: PLC0415

    key = generate_key()
    entry = {"name": args.name or "app", "hash": hash_key(key), **_identity_fields(args)}
    if args.json:
        out.write(json.dumps({**entry, "key": key}) + "\n")
        return 0
    # JSON values are YAML too, and quote what YAML would read otherwise (`*-mini`, say).
    fields = ", ".join(f"{name}: {json.dumps(value)}" for name, value in entry.items())
    out.write(
        f"key:  {key}\n"
        "      (shown once: give it to the caller; turnout keeps only the hash)\n"
        "config entry:\n"
        f"  keys:\n    - {{{fields}}}\n"
    )
    return 0


def _identity_fields(args: argparse.Namespace) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if args.user:
        body["user"] = args.user
    for field in ("teams", "routes", "allowed_models"):
        if getattr(args, field):
            body[field] = list(getattr(args, field))
    return body
