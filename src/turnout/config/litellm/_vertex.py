"""LiteLLM's `vertex_ai/…` deployments as `vertex` providers.

Rule 1: the project is `vertex_project` (else `${VERTEXAI_PROJECT}`, the variable LiteLLM
reads), the location `vertex_location` (else `${VERTEXAI_LOCATION}` when LiteLLM would read it,
which the import cannot know, so it is left to turnout's default `us-central1`).
Rule 2: `vertex_credentials` is a path, the JSON itself, or an environment variable holding
either: a JSON text (it starts with `{`) becomes `credentials_json` behind a variable (a
literal secret is never copied), a plain path `credentials_file`, and a variable
`credentials_json` with a note saying to rename the field when the variable holds a path.
Without it, application-default credentials are used, as LiteLLM does.
Rule 3: the publisher follows the model (`claude…` is anthropic, anything else google), so
Claude and Gemini deployments of one project become two providers, each of one family.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from turnout.config.litellm._values import env_reference, reference_of, text_of

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.config.litellm._notes import Notes
    from turnout.config.litellm._values import Secrets

__all__ = ["VERTEX_PARAMS", "vertex_fields"]

VERTEX_PARAMS = frozenset({"vertex_project", "vertex_location", "vertex_credentials"})
"""The deployment settings read here (others are noted as usual)."""


def vertex_fields(
    model: str, params: Mapping[str, Any], path: str, secrets: Secrets, notes: Notes
) -> tuple[tuple[str, str], ...]:
    """The `vertex` provider's own fields of a deployment, as (field, value) pairs."""
    fields = [("project", text_of(params.get("vertex_project")) or "${VERTEXAI_PROJECT}")]
    location = text_of(params.get("vertex_location"))
    if location is not None:
        fields.append(("location", location))
    credentials = _credentials(params.get("vertex_credentials"), path, secrets, notes)
    if credentials is not None:
        fields.append(credentials)
    bare = model.rsplit("/", 1)[-1].lower()
    fields.append(("publisher", "anthropic" if bare.startswith("claude") else "google"))
    return tuple(fields)


def _credentials(
    value: object, path: str, secrets: Secrets, notes: Notes
) -> tuple[str, str] | None:
    """Rule 2."""
    where = f"{path}.litellm_params.vertex_credentials"
    if isinstance(value, dict):
        value = orjson.dumps(value).decode()
    reference = env_reference(value)
    if reference is not None:
        notes.change(
            where,
            f"read as the service-account JSON in {reference}; if it holds a file path, "
            "rename credentials_json to credentials_file",
        )
        return "credentials_json", reference
    text = text_of(value)
    if text is None:
        return None
    if text.lstrip().startswith("{"):
        hidden = reference_of(text, where, secrets, notes)
        return None if hidden is None else ("credentials_json", hidden)
    return "credentials_file", text
