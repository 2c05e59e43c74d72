"""Caller keys and identity: hashing, the key ring, which header holds what,
the key's ceilings and the route of a request that names no model.

Pure logic: no I/O, no HTTP framework. The gateway hands in a header mapping and gets back a
`Caller` (who is calling, with what limits) and the caller's own provider credential, if any.

Rule 1: a `KeyRing` holds hashes only. A plaintext key from the configuration is hashed while
the ring is built and never stored; nothing here logs or repeats a key or a credential (their
reprs are masked).
Rule 2: a presented key is hashed once, found by a dict probe on part of its digest (O(1)), and
accepted only after a constant-time comparison of the whole digest.
Rule 3: a turnout key is never handed on as the caller's own credential: not the key itself
when a client sends it in two headers, nor any other known key.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Literal

from turnout.access.patterns import ModelPattern
from turnout.errors import ConfigError, InvalidApiKey, ModelDenied, ModelNotAllowed
from turnout.schema import RequireConfig

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from turnout.schema import KeyConfig

__all__ = [
    "HASH_SCHEME",
    "KEY_PREFIX",
    "NO_REQUIREMENTS",
    "Caller",
    "Credentials",
    "Identity",
    "KeyRing",
    "OwnCredential",
    "authenticate",
    "ceiling_check",
    "empty_model_route",
    "generate_key",
    "hash_key",
    "presented_caller",
    "split_credentials",
]

KEY_PREFIX: Final = "tk_"
"""The prefix of every key turnout generates."""
HASH_SCHEME: Final = "sha256:"
"""The scheme prefix of a stored key hash: `sha256:` and 64 lower-case hex digits."""

NO_REQUIREMENTS: Final = RequireConfig()
"""A key or binding that requires nothing of the targets serving it."""

_HASH_FORM = re.compile(r"sha256:[0-9a-f]{64}")
# The first hex digits of a digest pick a bucket; the whole digest is then compared in
# constant time. 16 hex digits make a second entry in one bucket vanishingly rare.
_BUCKET_DIGITS = 16 + len(HASH_SCHEME)
_AUTHORIZATION: Final = "authorization"
_API_KEY: Final = "x-api-key"
_TURNOUT_KEY: Final = "x-turnout-key"


def generate_key() -> str:
    """A new random key: `tk_` and 43 url-safe characters (256 bits from `secrets`)."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_key(key: str) -> str:
    """The stored form of `key`: `sha256:` and the hex SHA-256 of its UTF-8 bytes.

    A plain, fast hash is safe here because the keys turnout generates carry 256 random bits:
    slow hashes (bcrypt, scrypt) exist to make guessing low-entropy passwords expensive, and
    guessing a 256-bit key is out of reach at any hash speed, while a leaked digest reveals
    nothing thanks to SHA-256's preimage resistance. It is unkeyed on purpose, so a hash in a
    configuration file (or the planned store) means the same on every replica. Keys written into a
    configuration file by hand should be just as random: their strength is the operator's.
    The hash runs on every request, in about a microsecond.
    """
    return HASH_SCHEME + hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Identity:
    """Who a key speaks for. `agent_labels` are `(name, value)` pairs in name order."""

    user: str | None = None
    teams: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    agent: str | None = None
    agent_labels: tuple[tuple[str, str], ...] = ()
    workload: str | None = None
    workload_blueprint: str | None = None


@dataclass(frozen=True, slots=True)
class Caller:
    """A caller as the gateway knows it: its key's name, project, identity and limits.

    - `key`: the key's name (None for the anonymous caller of `auth: open`);
    - `routes`: the only routes the key may call (empty = no limit);
    - `allowed_models`: the only models it may ask for (empty = no limit);
    - `recording`: `full` (default) or `usage_only` (the response cache is read, never written);
    - `require`: data-handling requirements on every target that serves it (see
      `docs/configuration.md`, Require).
    """

    project: str
    key: str | None = None
    identity: Identity = Identity()
    routes: tuple[str, ...] = ()
    allowed_models: tuple[ModelPattern, ...] = ()
    recording: Literal["full", "usage_only"] = "full"
    require: RequireConfig = NO_REQUIREMENTS

    @classmethod
    def anonymous(cls, project: str) -> Caller:
        """The caller of `auth: open`: no key, no identity, no ceilings, in `project`."""
        return cls(project)

    @classmethod
    def from_config(cls, config: KeyConfig, project: str, *, path: str = "keys[0]") -> Caller:
        """The caller a configured key stands for; a bad `allowed_models` pattern raises
        `ConfigError` naming `path`."""
        patterns = tuple(
            ModelPattern.parse(text, path=f"{path}.allowed_models[{index}]")
            for index, text in enumerate(config.allowed_models)
        )
        identity = Identity(
            user=config.user,
            teams=config.teams,
            groups=config.groups,
            agent=config.agent,
            agent_labels=tuple(sorted(config.agent_labels.items())),
            workload=config.workload,
            workload_blueprint=config.workload_blueprint,
        )
        return cls(
            project,
            config.name,
            identity,
            config.routes,
            patterns,
            config.recording,
            config.require,
        )

    @property
    def label(self) -> str:
        """How messages name the caller: `key "app"`, or `the anonymous caller`."""
        return f'key "{self.key}"' if self.key is not None else "the anonymous caller"


class KeyRing:
    """The known keys of a project, by hash (see Rules 1 and 2).

    Build it with `from_config`, or from `(hash, Caller)` pairs (as the planned store will
    hold them).
    """

    __slots__ = ("_buckets", "_size")

    def __init__(self, entries: Iterable[tuple[str, Caller]] = ()) -> None:
        """Index `(hash, caller)` pairs; a malformed or repeated hash raises `ConfigError`."""
        self._buckets: dict[str, list[tuple[str, Caller]]] = {}
        self._size = 0
        for digest, caller in entries:
            if not _HASH_FORM.fullmatch(digest):
                raise _hash_form_error("hash", caller.key)
            bucket = self._buckets.setdefault(digest[:_BUCKET_DIGITS], [])
            if any(held == digest for held, _ in bucket):
                rule = f"{caller.label} has the same hash as another key"
                raise ConfigError(rule, [("hash", rule)])
            bucket.append((digest, caller))
            self._size += 1

    @classmethod
    def from_config(cls, keys: Sequence[KeyConfig], project: str) -> KeyRing:
        """Hash each plaintext `key` (dropping it) or take its `hash`; every key in `project`.

        Raises one `ConfigError` listing every problem with its path (`keys[2].hash`): a key
        with both or neither of `key` and `hash`, a malformed hash, a repeated name or key, or
        an invalid `allowed_models` pattern.
        """
        problems: list[tuple[str, str]] = []
        entries: list[tuple[str, Caller]] = []
        names: dict[str, int] = {}
        digests: dict[str, int] = {}
        for index, config in enumerate(keys):
            path = f"keys[{index}]"
            digest = _digest_of(config, path, problems)
            if config.name in names:
                rule = f'key name "{config.name}" is already used by keys[{names[config.name]}]'
                problems.append((f"{path}.name", rule))
            names.setdefault(config.name, index)
            if digest is not None and digest in digests:
                problems.append((path, f"the same key as keys[{digests[digest]}]"))
            try:
                caller = Caller.from_config(config, project, path=path)
            except ConfigError as exc:
                problems.extend(exc.errors)
                continue
            if digest is not None and digest not in digests:
                digests[digest] = index
                entries.append((digest, caller))
        if problems:
            raise ConfigError("\n".join(f"{where}: {rule}" for where, rule in problems), problems)
        return cls(entries)

    @classmethod
    def merged(cls, rings: Iterable[KeyRing]) -> tuple[KeyRing, tuple[Caller, ...]]:
        """One ring holding every key of `rings` (each caller keeps its project), and the
        callers left out because an earlier ring holds the same hash."""
        ring = cls()
        dropped: list[Caller] = []
        for other in rings:
            for prefix, bucket in other._buckets.items():
                held = ring._buckets.setdefault(prefix, [])
                for digest, caller in bucket:
                    if any(mine == digest for mine, _ in held):
                        dropped.append(caller)
                    else:
                        held.append((digest, caller))
                        ring._size += 1
        return ring, tuple(dropped)

    def lookup(self, presented: str) -> Caller | None:
        """The caller whose key is `presented`, or None for an unknown key."""
        digest = hash_key(presented)
        # The probe compares digests, which an attacker cannot steer: knowing that a stored
        # digest shares a prefix with the digest of a guess does not help find a key.
        for held, caller in self._buckets.get(digest[:_BUCKET_DIGITS], ()):
            if hmac.compare_digest(held, digest):
                return caller
        return None

    def __len__(self) -> int:
        return self._size

    def __repr__(self) -> str:
        return f"KeyRing({self._size} keys)"


def _digest_of(config: KeyConfig, path: str, problems: list[tuple[str, str]]) -> str | None:
    if (config.key is None) == (config.hash is None):
        problems.append((path, "set exactly one of key (plaintext) and hash"))
        return None
    if config.key is not None:
        return hash_key(config.key)
    digest = (config.hash or "").lower()
    if not _HASH_FORM.fullmatch(digest):
        problems.extend(_hash_form_error(f"{path}.hash", config.name).errors)
        return None
    return digest


def _hash_form_error(path: str, name: str | None) -> ConfigError:
    rule = f"the hash of key {name!r} must be '{HASH_SCHEME}' and 64 hex digits"
    return ConfigError(f"{path}: {rule}", [(path, rule)])


@dataclass(frozen=True, slots=True)
class OwnCredential:
    """The caller's own provider credential, forwarded only to passthrough targets.

    `header` is where it came: `authorization` (a Bearer token) or `x-api-key`; `secret` is
    the bare credential. The repr never shows it.
    """

    header: Literal["authorization", "x-api-key"]
    secret: str = field(repr=False)

    @property
    def header_value(self) -> str:
        """The header's value to forward: `Bearer <secret>` or the bare secret."""
        return f"Bearer {self.secret}" if self.header == _AUTHORIZATION else self.secret


@dataclass(frozen=True, slots=True)
class Credentials:
    """What a request's headers say about its caller (`split_credentials`).

    - `caller`: the key's caller; None when no key matched (and always with `auth: open`);
    - `own_credential`: the caller's own provider credential, if it sent one;
    - `key_presented`: a header that could hold a key was sent (says "unknown" vs "missing");
    - `is_open`: `auth: open`, where no key is needed and no credential filter applies.
    """

    caller: Caller | None
    own_credential: OwnCredential | None = None
    key_presented: bool = False
    is_open: bool = False

    @property
    def has_own_credential(self) -> bool:
        """Only passthrough targets serve this caller (never true under `auth: open`)."""
        return self.own_credential is not None and not self.is_open


def split_credentials(headers: Mapping[str, str], ring: KeyRing | None) -> Credentials:
    """Split a request's headers (names in any case) into the turnout key and the caller's own
    provider credential.

    - `x-turnout-key` present: it is the key; `Authorization: Bearer`, else `x-api-key`, is
      the caller's own credential.
    - Otherwise the first of `Authorization: Bearer` and `x-api-key` whose value is a known
      key is the key, and the other one, if sent, is the own credential.
    - `ring` None (`auth: open`): no key; what the caller sent in `Authorization: Bearer`
      (else `x-api-key`) is kept as the own credential, for passthrough targets only.

    A turnout key is never an own credential (Rule 3). An `Authorization` header with another
    scheme than Bearer is ignored.
    """
    lowered = {name.lower(): value for name, value in headers.items()}
    candidates = _candidates(lowered)
    turnout_key = lowered.get(_TURNOUT_KEY, "").strip()
    if ring is None:
        own = _own_credential(candidates, turnout_key, None)
        return Credentials(None, own, key_presented=bool(turnout_key), is_open=True)
    if turnout_key:
        own = _own_credential(candidates, turnout_key, ring)
        return Credentials(ring.lookup(turnout_key), own, key_presented=True)
    for candidate in candidates:
        caller = ring.lookup(candidate.secret)
        if caller is not None:
            return Credentials(caller, _own_credential(candidates, candidate.secret, ring), True)
    return Credentials(None, None, key_presented=bool(candidates))


def presented_caller(headers: Mapping[str, str], ring: KeyRing) -> Caller | None:
    """The caller of the first key the headers present (`x-turnout-key`, then
    `Authorization: Bearer`, then `x-api-key`) that `ring` knows, else None.

    For a request already refused: it names the revoked key a caller still sends, to log and
    audit the refusal under it.
    """
    if not len(ring):
        return None
    lowered = {name.lower(): value for name, value in headers.items()}
    presented = [lowered.get(_TURNOUT_KEY, "").strip()]
    presented.extend(found.secret for found in _candidates(lowered))
    for key in presented:
        caller = ring.lookup(key) if key else None
        if caller is not None:
            return caller
    return None


def _candidates(lowered: Mapping[str, str]) -> list[OwnCredential]:
    found: list[OwnCredential] = []
    scheme, _, token = lowered.get(_AUTHORIZATION, "").strip().partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        found.append(OwnCredential(_AUTHORIZATION, token.strip()))
    api_key = lowered.get(_API_KEY, "").strip()
    if api_key:
        found.append(OwnCredential(_API_KEY, api_key))
    return found


def _own_credential(
    candidates: Sequence[OwnCredential], key: str, ring: KeyRing | None
) -> OwnCredential | None:
    for found in candidates:
        if found.secret != key and (ring is None or ring.lookup(found.secret) is None):
            return found
    return None


def authenticate(credentials: Credentials, project: str) -> Caller:
    """The request's caller; `InvalidApiKey` (401) for a missing or unknown key.

    Under `auth: open` every caller is `Caller.anonymous(project)`.
    """
    if credentials.is_open:
        return Caller.anonymous(project)
    if credentials.caller is not None:
        return credentials.caller
    if credentials.key_presented:
        message = "the turnout key is unknown or revoked"
    else:
        message = "a turnout key is required: send it in x-turnout-key, Authorization or x-api-key"
    raise InvalidApiKey(message)


def ceiling_check(caller: Caller, route_name: str | None, model: str | None) -> None:
    """Raise `ModelDenied` (400) when the key's ceilings exclude the route or the model.

    The route is outside a non-empty `routes`, or `model` (any case) matches none of a
    non-empty `allowed_models`. An empty or None `model` (routed by `empty_model_route`)
    is checked against `routes` only; a None `route_name` (no route serves the model) against
    `allowed_models` only.
    """
    if caller.routes and route_name is not None and route_name not in caller.routes:
        raise ModelDenied(
            f'{caller.label} may not call route "{route_name}"; its routes are:'
            f" {', '.join(caller.routes)}"
        )
    if model and caller.allowed_models:
        lowered = model.lower()
        if not any(pattern.matches_lowered(lowered) for pattern in caller.allowed_models):
            allowed = ", ".join(str(pattern) for pattern in caller.allowed_models)
            raise ModelDenied(
                f'{caller.label} may not use model "{model}"; its allowed models are: {allowed}'
            )


def empty_model_route(caller: Caller) -> str:
    """The route of a request with an empty or missing `model`: the key's only route.

    A key with zero or several `routes` gets `ModelNotAllowed` (403) listing what it may call.
    """
    if len(caller.routes) == 1:
        return caller.routes[0]
    if caller.routes:
        message = (
            f"the request names no model and {caller.label} may call several routes"
            f" ({', '.join(caller.routes)}): name one of them as the model"
        )
    else:
        message = (
            f"the request names no model and {caller.label} is not limited to one route:"
            " name a model or a route"
        )
    raise ModelNotAllowed(message)
