"""Every credential field of a provider is sealed at rest and masked on read."""

from __future__ import annotations

from sqlalchemy import select, text

from turnout.store import Store
from turnout.store import service as svc
from turnout.store.models import Provider
from turnout.store.provider_secrets import MASK
from turnout.store.snapshot import load_snapshot

SA_JSON = '{"type": "service_account", "private_key": "VERY-SECRET-PEM"}'
VERTEX = {"name": "vx", "kind": "vertex", "project": "p1", "credentials_json": SA_JSON}
BEDROCK = {
    "name": "aws",
    "kind": "bedrock",
    "region": "us-east-1",
    "access_key_id": "AKIDEXAMPLE",
    "secret_access_key": "aws-very-secret",
    "session_token": "aws-session-secret",
}


def _raw_rows(store: Store) -> str:
    with store.engine.connect() as connection:
        rows = connection.execute(text("SELECT settings, secret FROM providers")).all()
    return repr(rows)


def test_cloud_credentials_never_reach_the_database_in_plaintext(store: Store) -> None:
    """A service-account JSON and AWS keys are sealed; reads mask them; serving gets them."""
    project = svc.create_project(store, {"name": "acme"})["id"]
    vertex = svc.create_object(store, "provider", project, VERTEX)
    bedrock = svc.create_object(store, "provider", project, BEDROCK)
    raw = _raw_rows(store)
    for secret in ("VERY-SECRET-PEM", "aws-very-secret", "aws-session-secret"):
        assert secret not in raw
    assert vertex["credentials_json"] == MASK
    assert vertex["api_key"] is None
    assert (bedrock["secret_access_key"], bedrock["session_token"]) == (MASK, MASK)
    served = {p.name: p for p in load_snapshot(store).projects["acme"].providers}
    assert served["vx"].credentials_json == SA_JSON
    assert served["aws"].secret_access_key == "aws-very-secret"
    assert served["aws"].access_key_id == "AKIDEXAMPLE"


def test_an_update_keeps_a_secret_it_leaves_out_or_sends_masked(store: Store) -> None:
    """Patching other fields, or echoing the mask, keeps the stored secret; null clears it."""
    project = svc.create_project(store, {"name": "acme"})["id"]
    made = svc.create_object(store, "provider", project, BEDROCK)
    svc.update_object(store, "provider", project, made["id"], {"region": "eu-west-1"})
    svc.update_object(store, "provider", project, made["id"], {"secret_access_key": MASK})
    cleared = svc.update_object(store, "provider", project, made["id"], {"session_token": None})
    assert "session_token" not in cleared
    served = load_snapshot(store).projects["acme"].providers[0]
    assert (served.region, served.secret_access_key) == ("eu-west-1", "aws-very-secret")
    assert served.session_token is None


def test_a_bare_key_sealed_before_several_fields_still_reads(store: Store) -> None:
    """A provider whose secret is the bare API key (the earlier form) serves that key."""
    project = svc.create_project(store, {"name": "acme"})["id"]
    made = svc.create_object(store, "provider", project, {"name": "o", "kind": "openai",
                                                          "api_key": "sk-new"})  # fmt: skip
    with store.sessions.begin() as session:
        row = session.scalars(select(Provider).where(Provider.id == made["id"])).one()
        row.secret = store.secrets.encrypt("sk-older-form")
        row.settings = {k: v for k, v in row.settings.items() if k != "api_key"}
    assert svc.get_object(store, "provider", project, made["id"])["api_key"] == MASK
    assert svc.provider_secret(store, project, made["id"]) == "sk-older-form"
    assert load_snapshot(store).projects["acme"].providers[0].api_key == "sk-older-form"
