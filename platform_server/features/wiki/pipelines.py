"""Pipeline definitions of a KB: JSON (or YAML) over a fixed step catalogue, validated as a whole.

Catalogue: `extract` (first), `chunk {size, overlap}`, `embed` (stores the chunks with vectors),
`synthesize {maxChunksPerCall}` (the LLM writes pages), `link` (wikilinks recomputed and checked),
`transform {transformationId, saveAsPage}`. The newest enabled pipeline of a KB processes its
materials instead of the built-in steps; each processing is a run with per-step status and timing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from platform_server.db import database, utcnow
from platform_server.features.audit import service as audit
from platform_server.features.wiki.kbs import get_kb
from platform_server.features.wiki.models import Pipeline, PipelineRun, Transformation
from platform_server.ids import NOT_BLANK_RE
from platform_server.lazy import lazy_import
from platform_server.serialize import Fields, flag, ident, when
from platform_server.web.context import Caller
from platform_server.web.errors import BadRequest, NotFound, Unprocessable
from platform_server.web.ownership import require_creator_or_admin

if TYPE_CHECKING:
    import yaml
else:
    yaml = lazy_import("yaml")

CATALOGUE: dict[str, dict[str, tuple[type, Any, Any]]] = {  # step -> param -> (type, min, max)
    "extract": {},
    "chunk": {"size": (int, 200, 8000), "overlap": (int, 0, 2000)},
    "embed": {},
    "synthesize": {"maxChunksPerCall": (int, 1, 50)},
    "link": {},
    "transform": {"transformationId": (str, None, None), "saveAsPage": (bool, None, None)},
}
NEEDS = {"chunk": "extract", "embed": "chunk", "synthesize": "embed", "link": "synthesize", "transform": "extract"}
MAX_STEPS = 12


def _definition(body: Any) -> dict[str, Any]:
    """The definition as a dict, from the JSON body or its `yaml` text (unknown fields kept, to be reported). Text that
    is no definition is a 422: the document says only "a string" (schemas.PipelineBody), so the request is well formed."""
    if not isinstance(body, dict):
        raise BadRequest("body: must be a JSON object")
    if body.get("yaml") is not None:
        if not isinstance(body["yaml"], str) or len(body["yaml"]) > 100_000:
            raise BadRequest("yaml: must be YAML text of at most 100000 characters")
        try:
            data = yaml.safe_load(body["yaml"])
        except yaml.YAMLError as exc:
            raise Unprocessable(f"yaml: not valid YAML: {str(exc).splitlines()[0]}")
        if not isinstance(data, dict):
            raise Unprocessable("yaml: must be a mapping with name and steps")
        return data
    return {k: v for k, v in body.items() if k != "yaml"}


def validate_definition(caller: Caller, kb_id: int, data: dict[str, Any]) -> list[str]:
    """Every problem of the definition (empty: valid)."""
    errors: list[str] = []
    name = data.get("name")
    if not isinstance(name, str) or not NOT_BLANK_RE.search(name):  # blank as the document's pattern reads it
        errors.append("name: must not be blank")
    elif len(name) > 100:
        errors.append("name: at most 100 characters")
    if data.get("description") is not None and (not isinstance(data["description"], str) or len(data["description"]) > 2000):
        errors.append("description: must be text of at most 2000 characters")
    if "enabled" in data and not isinstance(data["enabled"], bool):
        errors.append("enabled: must be true or false")
    for key in data:
        if key not in ("name", "description", "enabled", "steps"):
            errors.append(f"{key}: unknown field")
    steps = data.get("steps")
    if not isinstance(steps, list) or not steps:
        errors.append("steps: must be a non-empty list")
        return errors
    if len(steps) > MAX_STEPS:
        errors.append(f"steps: at most {MAX_STEPS}")
    seen: list[str] = []
    for n, step in enumerate(steps):
        where = f"steps[{n}]"
        if not isinstance(step, dict):
            errors.append(f"{where}: must be an object with a type")
            continue
        kind = step.get("type")
        if kind not in CATALOGUE:
            errors.append(f"{where}.type: must be one of {', '.join(CATALOGUE)}")
            continue
        if kind in seen:
            errors.append(f"{where}.type: {kind} appears twice")
        if n == 0 and kind != "extract":
            errors.append(f"{where}.type: the first step must be extract")
        need = NEEDS.get(kind)
        if need and need not in seen:
            errors.append(f"{where}: {kind} needs a {need} step before it")
        errors += _params(where, kind, step, caller, kb_id)
        seen.append(kind)
    if "chunk" in seen and "embed" not in seen:
        errors.append("steps: chunks are stored by the embed step; add one after chunk")
    return errors


def _params(where: str, kind: str, step: dict[str, Any], caller: Caller, kb_id: int) -> list[str]:
    errors = []
    spec = CATALOGUE[kind]
    for key, value in step.items():
        if key == "type":
            continue
        if key not in spec:
            errors.append(f"{where}.{key}: unknown parameter of {kind}")
            continue
        typ, low, high = spec[key]
        if typ is int and (not isinstance(value, int) or isinstance(value, bool)):
            errors.append(f"{where}.{key}: must be an integer")
        elif typ is int and not low <= value <= high:
            errors.append(f"{where}.{key}: must be between {low} and {high}")
        elif typ is bool and not isinstance(value, bool):
            errors.append(f"{where}.{key}: must be true or false")
        elif typ is str and not isinstance(value, (str, int)):
            errors.append(f"{where}.{key}: must be an id")
    if kind == "chunk" and isinstance(step.get("size", 1200), int) and isinstance(step.get("overlap", 150), int):
        if step.get("overlap", 150) >= step.get("size", 1200) // 2:
            errors.append(f"{where}.overlap: must be less than half of size")
    if kind == "transform":
        tid = step.get("transformationId")
        if tid is None:
            errors.append(f"{where}.transformationId: required")
        elif str(tid).isascii() and str(tid).isdigit():  # ASCII digits, as schemas.TransformStep states (int("²") fails)
            t = Transformation.get_or_none((Transformation.id == int(tid)) & (Transformation.workspace_id == caller.workspace_id))
            if t is None or (t.kb_id is not None and t.kb_id != kb_id):
                errors.append(f"{where}.transformationId: no such transformation for this knowledge base")
        else:
            errors.append(f"{where}.transformationId: must be an id")
    return errors


to_dict = Fields(
    id=ident("id"),
    kbId=ident("kb_id"),
    name="name",
    description="description",
    enabled=flag("enabled"),
    steps="steps",
    creatorUserId=ident("creator_user_id"),
    createTime=when("create_time"),
    updateTime=when("update_time"),
)


run_dict = Fields(
    id=ident("id"),
    pipelineId=ident("pipeline_id"),
    kbId=ident("kb_id"),
    rawId=ident("raw_id"),
    status="status",
    steps="steps",
    error="error",
    createTime=when("create_time"),
    endTime=when("end_time"),
)


def validate(caller: Caller, kb_id: int, body: Any) -> dict[str, Any]:
    get_kb(caller, kb_id)
    try:
        errors = validate_definition(caller, kb_id, _definition(body))
    except (BadRequest, Unprocessable) as exc:
        errors = [exc.msg]
    return {"valid": not errors, "errors": errors}


def save(caller: Caller, kb_id: int, body: Any) -> dict[str, Any]:
    """Create, or update the pipeline of the same name; 422 with every error when the definition does not hold
    together (the handler refused with a 400 what the document's PipelineBody refuses)."""
    kb = get_kb(caller, kb_id)
    data = _definition(body)
    errors = validate_definition(caller, kb.id, data)
    if errors:
        raise Unprocessable("; ".join(errors))
    steps = [{**s, **({"transformationId": str(s["transformationId"])} if "transformationId" in s else {})} for s in data["steps"]]
    name = data["name"].strip()
    with database.atomic():
        p = Pipeline.get_or_none((Pipeline.kb == kb.id) & (Pipeline.name == name))
        if p is None:
            p = Pipeline.create(
                kb=kb.id,
                name=name,
                description=data.get("description") or "",
                enabled=data.get("enabled", True),
                steps=steps,
                creator_user_id=caller.user_id,
            )
        else:
            # Saving under an existing name replaces that pipeline: an edit of someone else's object.
            require_creator_or_admin(caller, p.creator_user_id, "pipeline")
            p.description, p.enabled, p.steps = data.get("description") or "", data.get("enabled", True), steps
            p.update_time = utcnow()
            p.save()
        audit.record(caller, "UPDATE", "WIKI_PIPELINE", p.id, f"pipeline {name} of {kb.name}")
    return to_dict(p)


def list_pipelines(caller: Caller, kb_id: int) -> list[dict[str, Any]]:
    kb = get_kb(caller, kb_id)
    return [to_dict(p) for p in Pipeline.select().where(Pipeline.kb == kb.id).order_by(Pipeline.name)]


def _get(caller: Caller, kb_id: int, pid: int) -> Pipeline:
    kb = get_kb(caller, kb_id)
    p = Pipeline.get_or_none((Pipeline.id == pid) & (Pipeline.kb == kb.id))
    if p is None:
        raise NotFound("Pipeline not found")
    return p


def delete(caller: Caller, kb_id: int, pid: int) -> None:
    with database.atomic():
        p = _get(caller, kb_id, pid)
        require_creator_or_admin(caller, p.creator_user_id, "pipeline")
        p.delete_instance(recursive=True)
        audit.record(caller, "DELETE", "WIKI_PIPELINE", pid, f"pipeline {p.name}")


def runs(caller: Caller, kb_id: int, pid: int, limit: int = 100) -> list[dict[str, Any]]:
    p = _get(caller, kb_id, pid)
    q = PipelineRun.select().where(PipelineRun.pipeline == p.id)
    return [run_dict(r) for r in q.order_by(PipelineRun.create_time.desc(), PipelineRun.id.desc()).limit(limit)]


def get_run(caller: Caller, kb_id: int, run_id: int) -> dict[str, Any]:
    kb = get_kb(caller, kb_id)
    r = PipelineRun.get_or_none((PipelineRun.id == run_id) & (PipelineRun.kb == kb.id))
    if r is None:
        raise NotFound("Pipeline run not found")
    return run_dict(r)


def active(kb_id: int) -> Pipeline | None:
    """The pipeline that processes the KB's materials: the newest enabled one."""
    return (
        Pipeline.select()
        .where((Pipeline.kb == kb_id) & (Pipeline.enabled == True))  # noqa: E712
        .order_by(Pipeline.update_time.desc(), Pipeline.id.desc())
        .first()
    )
