"""Keys: generation, hashing, the key ring, which header holds what, ceilings, empty models."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import string
from typing import Any

import pytest

from turnout.access import keys as keys_module
from turnout.access.keys import (
    HASH_SCHEME,
    Caller,
    Credentials,
    Identity,
    KeyRing,
    OwnCredential,
    authenticate,
    ceiling_check,
    empty_model_route,
    generate_key,
    hash_key,
    split_credentials,
)
from turnout.access.patterns import ModelPattern
from turnout.config.load import parse_config
from turnout.errors import ConfigError, RoutingError
from turnout.schema import KeyConfig

APP_KEY = "app-secret-key-1"
CI_KEY = "ci-secret-key-22"
OWN = "sk-provider-own-credential"


def key(name: str, **fields: Any) -> KeyConfig:
    """A key config from keyword fields."""
    return KeyConfig.model_validate({"name": name, **fields})


@pytest.fixture
def ring() -> KeyRing:
    """A ring with the keys `app` and `ci`."""
    return KeyRing.from_config([key("app", key=APP_KEY), key("ci", key=CI_KEY)], "default")


def reachable_strings(value: object, seen: set[int] | None = None) -> list[str]:
    """Every string reachable from `value` through containers, slots and dataclass fields."""
    seen = set() if seen is None else seen
    if id(value) in seen:
        return []
    seen.add(id(value))
    if isinstance(value, str):
        return [value]
    children: list[object] = []
    if isinstance(value, dict):
        children = [*value.keys(), *value.values()]
    elif isinstance(value, (list, tuple, set, frozenset)):
        children = list(value)
    elif dataclasses.is_dataclass(value):
        children = [getattr(value, f.name) for f in dataclasses.fields(value)]
    elif hasattr(value, "__slots__"):
        children = [getattr(value, slot) for slot in value.__slots__ if hasattr(value, slot)]
    elif hasattr(value, "__dict__"):
        children = list(vars(value).values())
    return [found for child in children for found in reachable_strings(child, seen)]


def test_generated_keys_are_prefixed_url_safe_and_random() -> None:
    """generate_key gives `tk_` plus at least 32 url-safe characters, never twice the same."""
    made = {generate_key() for _ in range(200)}
    alphabet = set(string.ascii_letters + string.digits + "-_")
    assert len(made) == 200
    for made_key in made:
        assert made_key.startswith("tk_")
        assert len(made_key) - 3 >= 32
        assert set(made_key[3:]) <= alphabet


def test_hash_is_deterministic_sha256_with_scheme() -> None:
    """hash_key is `sha256:` + the hex SHA-256 of the key, the same on every call."""
    expected = "sha256:" + hashlib.sha256(APP_KEY.encode()).hexdigest()
    assert hash_key(APP_KEY) == hash_key(APP_KEY) == expected
    assert hash_key(APP_KEY) != hash_key(CI_KEY)
    assert HASH_SCHEME == "sha256:"


def test_ring_finds_callers_by_plaintext_key(ring: KeyRing) -> None:
    """A presented key finds its caller; an unknown key finds nothing."""
    found = ring.lookup(APP_KEY)
    assert found is not None
    assert (found.key, found.project) == ("app", "default")
    assert ring.lookup("not-a-key-at-all") is None
    assert ring.lookup(APP_KEY.upper()) is None
    assert len(ring) == 2


def test_ring_never_keeps_plaintext(ring: KeyRing) -> None:
    """After loading, no plaintext key is reachable from the ring or shown in its repr."""
    strings = reachable_strings(ring)
    assert hash_key(APP_KEY) in strings
    assert not any(APP_KEY in text or CI_KEY in text for text in strings)
    assert APP_KEY not in repr(ring)


def test_ring_accepts_stored_hashes_in_any_case() -> None:
    """A key declared by `hash` (upper-case hex accepted) is found by its plaintext."""
    stored = "sha256:" + hashlib.sha256(APP_KEY.encode()).hexdigest().upper()
    ring = KeyRing.from_config([key("app", hash=stored)], "p1")
    found = ring.lookup(APP_KEY)
    assert found is not None
    assert found.project == "p1"


def test_lookup_compares_the_digest_in_constant_time(
    ring: KeyRing, monkeypatch: pytest.MonkeyPatch
) -> None:
    """lookup accepts a key only through hmac.compare_digest on the whole digest."""
    compared: list[tuple[str, str]] = []

    def spy(a: str, b: str) -> bool:
        compared.append((a, b))
        return False

    monkeypatch.setattr(hmac, "compare_digest", spy)
    assert ring.lookup(APP_KEY) is None
    assert compared == [(hash_key(APP_KEY), hash_key(APP_KEY))]


def test_keys_sharing_a_bucket_are_told_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two digests with the same leading digits each find their own caller."""
    first = "sha256:" + "0" * 63 + "1"
    second = "sha256:" + "0" * 63 + "2"
    ring = KeyRing([(first, Caller("p", "one")), (second, Caller("p", "two"))])
    digests = {"k1": first, "k2": second, "k3": "sha256:" + "0" * 63 + "3"}
    monkeypatch.setattr(keys_module, "hash_key", digests.__getitem__)
    assert [getattr(ring.lookup(k), "key", None) for k in ("k1", "k2", "k3")] == [
        "one",
        "two",
        None,
    ]


def test_ring_lists_every_key_problem_with_its_path() -> None:
    """Both/neither of key and hash, bad hash, repeated name or key, bad pattern: all listed."""
    configs = [
        key("a", key=APP_KEY, hash=hash_key(APP_KEY)),
        key("b"),
        key("c", hash="md5:abc"),
        key("a", key=CI_KEY),
        key("e", key=CI_KEY),
        key("f", key="another-key-000", allowed_models=["gpt*4*"]),
    ]
    with pytest.raises(ConfigError) as info:
        KeyRing.from_config(configs, "default")
    paths = [path for path, _ in info.value.errors]
    assert paths == [
        "keys[0]",
        "keys[1]",
        "keys[2].hash",
        "keys[3].name",
        "keys[4]",
        "keys[5].allowed_models[0]",
    ]
    assert info.value.status == 400
    assert APP_KEY not in str(info.value)


def test_a_declared_key_may_be_any_non_empty_string() -> None:
    """A short key such as LiteLLM's documented `sk-1234` loads and finds its caller; an
    empty one is refused."""
    config = parse_config({"keys": [{"name": "master", "key": "sk-1234"}]}, env={})
    found = KeyRing.from_config(config.keys, "default").lookup("sk-1234")
    assert found is not None
    assert found.key == "master"
    with pytest.raises(ConfigError, match=r"keys\[0\]\.key"):
        parse_config({"keys": [{"name": "master", "key": " "}]}, env={})


def test_ring_refuses_malformed_or_repeated_hashes_in_entries() -> None:
    """Building a ring from stored entries checks the hash form and uniqueness."""
    digest = hash_key(APP_KEY)
    with pytest.raises(ConfigError, match="64 hex digits"):
        KeyRing([("sha256:xyz", Caller("p", "a"))])
    with pytest.raises(ConfigError, match="same hash"):
        KeyRing([(digest, Caller("p", "a")), (digest, Caller("p", "b"))])


def test_caller_carries_identity_and_limits_from_config() -> None:
    """Caller.from_config maps identity, routes, allowed models, recording and requirements."""
    config = key(
        "app",
        key=APP_KEY,
        user="ana",
        teams=["platform"],
        groups=["eng"],
        agent="reviewer",
        agent_labels={"tier": "gold", "env": "prod"},
        workload="billing",
        workload_blueprint="batch",
        routes=["main"],
        allowed_models=["GPT-4o*"],
        recording="usage_only",
        require={"zero_data_retention": True},
    )
    caller = Caller.from_config(config, "proj")
    assert caller.identity == Identity(
        user="ana",
        teams=("platform",),
        groups=("eng",),
        agent="reviewer",
        agent_labels=(("env", "prod"), ("tier", "gold")),
        workload="billing",
        workload_blueprint="batch",
    )
    assert (caller.project, caller.key, caller.routes) == ("proj", "app", ("main",))
    assert caller.allowed_models == (ModelPattern.parse("gpt-4o*"),)
    assert caller.recording == "usage_only"
    assert caller.require.zero_data_retention


def test_anonymous_caller_has_no_key_identity_or_ceilings() -> None:
    """Caller.anonymous is keyless, identity-free and unlimited, in the given project."""
    caller = Caller.anonymous("default")
    assert (caller.key, caller.identity, caller.routes, caller.allowed_models) == (
        None,
        Identity(),
        (),
        (),
    )
    assert caller.project == "default"
    assert caller.label == "the anonymous caller"


def own(header: str, secret: str) -> OwnCredential:
    """An own credential (typed)."""
    assert header in ("authorization", "x-api-key")
    return OwnCredential(header, secret)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("headers", "caller", "expected_own"),
    [
        ({"x-turnout-key": APP_KEY}, "app", None),
        ({"x-turnout-key": APP_KEY, "authorization": f"Bearer {OWN}"}, "app", ("authorization",)),
        ({"x-turnout-key": APP_KEY, "x-api-key": OWN}, "app", ("x-api-key",)),
        (
            {"x-turnout-key": APP_KEY, "authorization": f"Bearer {OWN}", "x-api-key": "sk-2"},
            "app",
            ("authorization",),
        ),
        ({"authorization": f"Bearer {APP_KEY}"}, "app", None),
        ({"x-api-key": APP_KEY}, "app", None),
        ({"authorization": f"Bearer {APP_KEY}", "x-api-key": OWN}, "app", ("x-api-key",)),
        ({"authorization": f"Bearer {OWN}", "x-api-key": APP_KEY}, "app", ("authorization",)),
        ({"authorization": f"Bearer {APP_KEY}", "x-api-key": APP_KEY}, "app", None),
        ({"x-turnout-key": APP_KEY, "x-api-key": APP_KEY}, "app", None),
        ({"authorization": f"Bearer {APP_KEY}", "x-api-key": CI_KEY}, "app", None),
        ({"x-turnout-key": APP_KEY, "authorization": f"Bearer {CI_KEY}"}, "app", None),
        ({"Authorization": f"bearer {APP_KEY}", "X-Api-Key": OWN}, "app", ("x-api-key",)),
    ],
)
def test_header_rules_pick_the_key_and_the_own_credential(
    ring: KeyRing,
    headers: dict[str, str],
    caller: str,
    expected_own: tuple[str] | None,
) -> None:
    """x-turnout-key first, else the first known of Bearer/x-api-key; a key is never own."""
    found = split_credentials(headers, ring)
    assert found.caller is not None
    assert found.caller.key == caller
    if expected_own is None:
        assert found.own_credential is None
        assert not found.has_own_credential
    else:
        assert found.own_credential is not None
        assert found.own_credential.header == expected_own[0]
        assert found.has_own_credential
        assert found.own_credential.secret not in (APP_KEY, CI_KEY)


@pytest.mark.parametrize(
    ("headers", "presented"),
    [
        ({}, False),
        ({"authorization": "Basic dXNlcjpwYXNz"}, False),
        ({"authorization": "Bearer "}, False),
        ({"authorization": f"Bearer {OWN}"}, True),
        ({"x-api-key": OWN}, True),
        ({"x-turnout-key": "tk_unknown"}, True),
    ],
)
def test_missing_or_unknown_key_finds_no_caller(
    ring: KeyRing, headers: dict[str, str], presented: bool
) -> None:
    """No known key: no caller, and `key_presented` tells unknown from missing."""
    found = split_credentials(headers, ring)
    assert found.caller is None
    assert found.key_presented is presented
    with pytest.raises(RoutingError) as info:
        authenticate(found, "default")
    assert (info.value.status, info.value.code) == (401, "invalid_api_key")
    assert ("unknown" in info.value.message) is presented


def test_unknown_turnout_key_still_separates_the_own_credential(ring: KeyRing) -> None:
    """With an unknown x-turnout-key, Authorization is still the own credential, not a key."""
    found = split_credentials({"x-turnout-key": "tk_x", "authorization": f"Bearer {APP_KEY}"}, ring)
    assert found.caller is None
    assert found.own_credential is None


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, None),
        ({"authorization": "Bearer placeholder"}, ("authorization", "placeholder")),
        ({"x-api-key": "sk-ant"}, ("x-api-key", "sk-ant")),
        ({"authorization": "Bearer a", "x-api-key": "b"}, ("authorization", "a")),
        (
            {"x-turnout-key": "same", "authorization": "Bearer same", "x-api-key": "b"},
            ("x-api-key", "b"),
        ),
    ],
)
def test_open_auth_keeps_what_was_sent_for_passthrough_only(
    headers: dict[str, str], expected: tuple[str, str] | None
) -> None:
    """auth: open: no key, no credential filter, the sent credential kept for passthrough."""
    found = split_credentials(headers, None)
    assert found.is_open
    assert found.caller is None
    assert not found.has_own_credential
    got = found.own_credential
    assert (None if got is None else (got.header, got.secret)) == expected
    assert authenticate(found, "default") == Caller.anonymous("default")


def test_own_credential_is_masked_and_rebuilds_its_header() -> None:
    """The own credential's repr hides the secret; header_value is what to forward."""
    bearer, api_key = own("authorization", OWN), own("x-api-key", OWN)
    assert OWN not in repr(bearer)
    assert OWN not in repr(Credentials(None, bearer))
    assert bearer.header_value == f"Bearer {OWN}"
    assert api_key.header_value == OWN


def limited(**fields: Any) -> Caller:
    """A caller of key `app` with the given limits."""
    return dataclasses.replace(Caller("default", "app"), **fields)


def test_ceiling_refuses_a_route_outside_the_keys_routes() -> None:
    """`routes` non-empty and the route outside it -> 400 MODEL_DENIED naming the routes."""
    caller = limited(routes=("main", "cheap"))
    ceiling_check(caller, "main", "gpt-4o")
    with pytest.raises(RoutingError) as info:
        ceiling_check(caller, "other", "gpt-4o")
    assert (info.value.status, info.value.code) == (400, "MODEL_DENIED")
    assert '"other"' in info.value.message
    assert "main, cheap" in info.value.message


def test_ceiling_refuses_a_model_outside_allowed_models() -> None:
    """A model matching none of `allowed_models` (any case) -> 400 MODEL_DENIED."""
    caller = limited(allowed_models=(ModelPattern.parse("gpt-4o*"),))
    ceiling_check(caller, "any", "GPT-4o-mini")
    with pytest.raises(RoutingError) as info:
        ceiling_check(caller, "any", "claude-sonnet-4")
    assert (info.value.status, info.value.code) == (400, "MODEL_DENIED")
    assert "gpt-4o*" in info.value.message


def test_ceiling_without_limits_or_model_lets_everything_through() -> None:
    """No ceilings pass anything; an empty model is checked against `routes` only."""
    ceiling_check(Caller.anonymous("default"), "whatever", "any-model")
    caller = limited(routes=("main",), allowed_models=(ModelPattern.parse("gpt-*"),))
    ceiling_check(caller, "main", None)
    ceiling_check(caller, "main", "")
    with pytest.raises(RoutingError):
        ceiling_check(caller, "side", None)


def test_empty_model_goes_to_the_keys_only_route() -> None:
    """A key with exactly one route sends an empty-model request there."""
    assert empty_model_route(limited(routes=("main",))) == "main"


@pytest.mark.parametrize("routes", [(), ("main", "cheap")])
def test_empty_model_without_a_single_route_is_not_allowed(routes: tuple[str, ...]) -> None:
    """Zero or several routes -> 403 model_not_allowed listing the routes it may call."""
    with pytest.raises(RoutingError) as info:
        empty_model_route(limited(routes=routes))
    assert (info.value.status, info.value.code) == (403, "model_not_allowed")
    for route in routes:
        assert route in info.value.message
