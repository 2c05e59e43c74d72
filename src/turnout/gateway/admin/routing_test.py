"""`POST /admin/v1/routing/test`: where a model would go for a caller, without calling
anything.

Rule 1: the caller is named by `key_id` (a stored key's id, else a config-file key's name), or
by `subject` (a binding subject: the caller it describes), else it is the anonymous caller. An
unknown key is 404. A stored key id is unique: its project is the test's, and a `project_id`
that names another is 400.
Rule 2: the answer is 200 whether the gateway would serve or refuse the request: `resolved`
(the route, how it matched, the targets in try order) or `refused` (the status, code and
message the caller would get). `grant` is the grant that allows the model; when it names a
route, `without_grant` says where the model would go if it did not.
Rule 3: the same decisions as a real request (`Runtime.resolve`, the access policy); nothing
here decides anything of its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from turnout.access.bindings import IMPLICIT_GRANT
from turnout.access.keys import Caller, Identity
from turnout.errors import ConfigError, ObjectNotFound, RoutingError
from turnout.gateway.admin.dispatch import Operation
from turnout.gateway.admin.replies import AdminError, json_body
from turnout.gateway.admin.schemas import RoutingTestBody
from turnout.gateway.admin.served import served_project
from turnout.gateway.admin.writes import read
from turnout.gateway.runtime.describe import caller_named, resolution_row
from turnout.schema import KeyConfig
from turnout.store import service
from turnout.store._writes import to_config_error

if TYPE_CHECKING:
    from turnout.access.bindings import Decision
    from turnout.gateway.admin.dispatch import AdminCall
    from turnout.gateway.admin.served import ServedProject
    from turnout.gateway.responses.respond import Reply
    from turnout.gateway.runtime.route_entry import Endpoint
    from turnout.schema import SubjectConfig

__all__ = ["routing_operations"]


async def routing_test(call: AdminCall) -> Reply:
    try:
        asked = RoutingTestBody.model_validate(call.body)
    except ValidationError as exc:
        raise to_config_error("routing test", exc) from None
    project = await served_project(call, await _project_id(call, asked))
    caller = await _caller(call, project, asked)
    runtime = project.runtime
    answer: dict[str, Any] = {
        "project": project.name,
        "project_id": project.id,
        "model": asked.model,
        "caller": caller.label,
        "resolved": None,
        "refused": None,
        "grant": None,
        "without_grant": None,
    }
    endpoint: Endpoint = asked.endpoint
    try:
        found = runtime.resolve(asked.model, endpoint=endpoint, caller=caller)
    except RoutingError as exc:
        answer["refused"] = _refusal(exc)
    else:
        answer["resolved"] = _resolved(resolution_row(found, endpoint))
    decision = _decision(project, caller, asked.model)
    if decision is not None:
        answer["grant"] = _grant(decision)
        if decision.route is not None:
            answer["without_grant"] = _without_grant(project, asked.model, endpoint)
    return json_body(200, answer)


async def _project_id(call: AdminCall, asked: RoutingTestBody) -> str | None:
    """Rule 1: the project of a stored key named by `key_id`, else the one asked for."""
    if asked.key_id is None:
        return asked.project_id
    stored = await read(call, service.find_key, asked.key_id)
    if stored is None:
        return asked.project_id
    owner: str = stored["project_id"]
    if asked.project_id is not None and asked.project_id != owner:
        rule = (
            f"key {asked.key_id!r} belongs to project {owner!r}, not {asked.project_id!r};"
            " omit project_id or name the key's own"
        )
        raise ConfigError(f"invalid routing test: project_id: {rule}", [("project_id", rule)])
    return owner


async def _caller(call: AdminCall, project: ServedProject, asked: RoutingTestBody) -> Caller:
    """Rule 1."""
    if asked.key_id is not None and asked.subject is not None:
        rule = "name the caller by key_id or by subject, not both"
        raise ConfigError(f"invalid routing test: {rule}", [("subject", rule)])
    if asked.key_id is not None:
        return await _key_caller(call, project, asked.key_id)
    if asked.subject is not None:
        return _subject_caller(asked.subject, project.name)
    return Caller.anonymous(project.name)


async def _key_caller(call: AdminCall, project: ServedProject, key_id: str) -> Caller:
    if project.id is not None:
        try:
            stored = await read(call, service.get_key, project.id, key_id)
        except ObjectNotFound:
            pass
        else:
            fields = {name: stored[name] for name in KeyConfig.model_fields if name in stored}
            return Caller.from_config(KeyConfig.model_validate(fields), project.name)
    try:
        return caller_named(project.runtime, key_id)
    except LookupError:
        raise AdminError(
            404, "NOT_FOUND", f"no key {key_id!r} in project {project.name!r}"
        ) from None


def _subject_caller(subject: SubjectConfig, project: str) -> Caller:
    labels: tuple[tuple[str, str], ...] = ()
    if subject.agent_label:
        name, _, value = subject.agent_label.partition("=")
        labels = ((name, value),)
    identity = Identity(
        user=subject.user,
        teams=(subject.team,) if subject.team else (),
        groups=(subject.group,) if subject.group else (),
        agent=subject.agent,
        agent_labels=labels,
        workload=subject.workload,
        workload_blueprint=subject.workload_blueprint,
    )
    return Caller(project, subject.key, identity)


def _decision(project: ServedProject, caller: Caller, model: str) -> Decision | None:
    access = project.runtime.access
    if access.is_open:
        return IMPLICIT_GRANT
    try:
        return access.decide(caller, model)
    except RoutingError:
        return None


def _without_grant(project: ServedProject, model: str, endpoint: Endpoint) -> dict[str, Any]:
    try:
        found = project.runtime.lookups.resolve_ungranted(model, endpoint=endpoint)
    except RoutingError as exc:
        return _refusal(exc)
    return _resolved(resolution_row(found, endpoint))


def _resolved(row: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in row.items() if name not in ("model", "endpoint")}


def _refusal(exc: RoutingError) -> dict[str, Any]:
    return {"status": exc.status, "code": exc.code, "message": exc.message}


def _grant(decision: Decision) -> dict[str, Any]:
    grant = decision.grant
    return {
        "binding": decision.binding,
        "subject": None if decision.subject is None else str(decision.subject),
        "models": None if grant is None else grant.models,
        "route": decision.route,
        "text": decision.granted_by,
    }


def routing_operations() -> tuple[Operation, ...]:
    """`/routing/test`."""
    return (
        Operation("POST", "/routing/test", routing_test,
                  "Where a model would go for a caller, and the grant that allows it",
                  "routing", (200, "RoutingTestResult"), "RoutingTestBody", errors=(400, 404)),
    )  # fmt: skip
