"""OpenAPI 3 document generated from the route table and the handlers' request models."""

from __future__ import annotations

import inspect

from platform_server import __version__
from platform_server.ids import CONVERSATION_ID_PATTERN
from platform_server.json_types import JsonObject
from platform_server.web.base import ApiHandler, dumps
from platform_server.web.bodies import INT64_MAX, INT64_MIN
from platform_server.web.context import PUBLIC
from platform_server.web.openapi_answers import NULL, answer_ref
from platform_server.web.openapi_events import SseEvents, stream_ref
from platform_server.web.openapi_inputs import add_inputs
from platform_server.web.openapi_statuses import fix_statuses
from platform_server.web.routing import Route

_ERRORS = {
    "400": "Parameter error: `<field>: <message>` or `Invalid value for parameter '<name>': expected Long`",
    "401": "Token expired or invalid",
    "403": "Insufficient workspace role, or not the owner",
    "404": "Resource not found",
    "405": "Method not allowed (see the Allow header)",
    "413": "Request body too large",
    "429": "Too many requests",
    "500": "Internal server error (also result codes 1001, 1002, 2001, 3001, 4001)",
    "503": "Request timeout, please try again",
}

_ENVELOPE = {
    "type": "object",
    "required": ["code", "msg"],
    "properties": {"code": {"type": "integer"}, "msg": {"type": "string"}, "data": {}},
}
_ERROR = {
    "type": "object",
    "required": ["code", "msg"],
    "properties": {"code": {"type": "integer"}, "msg": {"type": "string"}, "data": {"nullable": True}},
}
_CONFIRM = {
    "type": "object",
    "required": ["code", "message"],
    "properties": {"code": {"type": "integer"}, "message": {"type": "string"}, "boundAgents": {}},
}


def _takes_empty_object(schema: JsonObject) -> bool:
    """Whether `{}` is valid for a body schema: no field required, and when "exactly one of" (oneOf) or "at least one
    of" (anyOf) branches are stated, {} passes exactly one / at least one of them (a branch requiring nothing, as
    "enabled: false, or a url" states it). An array body never takes {}, nor does a branch of another type (the bare
    list beside the object an agent's bindings take); a branch by $ref counts as requiring."""
    if schema.get("type") == "array" or schema.get("required"):
        return False
    for word, fits in (("anyOf", lambda n: n >= 1), ("oneOf", lambda n: n == 1)):
        branches = schema.get(word)
        if isinstance(branches, list) and branches:
            free = [
                b
                for b in branches
                if isinstance(b, dict) and b.get("type", "object") == "object" and not ({"$ref", "required", "minProperties", "not"} & set(b))
            ]
            if not fits(len(free)):
                return False
    return True


def _oas30(schema: object) -> object:
    """JSON Schema 2020 (pydantic) to OpenAPI 3.0: numeric exclusiveMinimum/Maximum become a bound plus a flag."""
    if isinstance(schema, list):
        return [_oas30(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: _oas30(value) for key, value in schema.items()}
    if "const" in out:  # 3.0 has no const: a one-value enum says the same
        out["enum"] = [out.pop("const")]
    if out.get("type") == "null":  # a bare null: 3.0 has no null type
        out.pop("type")
        out["nullable"] = True
    for word in ("anyOf", "oneOf"):  # Optional[X] is anyOf [X, null]: 3.0 says X with nullable
        branches = out.get(word)
        if isinstance(branches, list) and any(b == {"nullable": True} for b in branches):
            rest = [b for b in branches if b != {"nullable": True}]
            out.pop(word)
            if len(rest) == 1 and isinstance(rest[0], dict) and "$ref" not in rest[0]:
                out.update({k: v for k, v in rest[0].items() if k not in out})  # a field's own extras (json_schema_extra) win
                out["nullable"] = True
            else:  # `nullable` beside a $ref or anyOf is not read by validators (3.0 ties it to `type`): a null branch is
                out[word] = [*rest, NULL]
    values = out.get("enum")
    if out.get("nullable") is True and isinstance(values, list) and None not in values:
        out["enum"] = [*values, None]  # OpenAPI 3.0.3: a nullable enum lists null, or null is not a valid value
    for word, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        value = out.get(word)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[bound] = value
            out[word] = True
    return out


def int64_bounds(schema: object) -> None:
    """State a request body's integers as the server reads them (web.bodies.check_int64): 64-bit, a 400 beyond."""
    if isinstance(schema, list):
        for item in schema:
            int64_bounds(item)
    elif isinstance(schema, dict):
        if schema.get("type") == "integer":
            schema.setdefault("format", "int64")
            schema.setdefault("minimum", INT64_MIN)
            schema.setdefault("maximum", INT64_MAX)
        for value in schema.values():
            int64_bounds(value)


# String ids the server checks the same way on every route that takes them (conversations.service.validate_id)
_STRING_IDS: dict[str, JsonObject] = {"conversationId": {"type": "string", "pattern": CONVERSATION_ID_PATTERN}}


def _path_params(route: Route) -> list[JsonObject]:
    params: list[JsonObject] = []
    stated = getattr(route.handler, "path_schemas", {})  # a handler's own limits on a string parameter (an enum)
    for segment in route.template.split("/"):
        if segment.startswith("{") and segment.endswith("}"):
            name = segment[1:-1]
            schema = {"type": "string", "pattern": "^[0-9]{1,18}$"} if name in route.long_params else {"type": "string"}
            schema = dict(stated.get(name, _STRING_IDS.get(name, schema)))
            params.append({"name": name, "in": "path", "required": True, "schema": schema})
    return params


_VERBS = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete", "HEAD": "head"}


def _operation_id(template: str, method: str, taken: set[str]) -> str:
    """`agents_list`, `agents_get`, `agents_kbs_update`: from path and method, so ids stay stable as classes move."""
    parts = [seg for seg in template.split("/") if seg and seg not in ("api", "v1")]
    words = ["".join(ch if ch.isalnum() else "_" for ch in seg) for seg in parts if not seg.startswith("{")]
    verb = _VERBS.get(method, method.lower())
    if method == "GET" and not (parts and parts[-1].startswith("{")):
        verb = "list"
    base = "_".join([*words, verb]) or verb
    if base in taken:  # two routes differ only by their parameters: name the parameters
        base = "_".join([*words, *(seg[1:-1] for seg in parts if seg.startswith("{")), verb])
    name, n = base, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    taken.add(name)
    return name


def _summary(handler: type[ApiHandler], method: str) -> str:
    doc = inspect.getdoc(getattr(handler, method.lower())) or ""
    return doc.splitlines()[0] if doc else f"{method} {handler.__name__}"


def _events(handler: type[ApiHandler], method: str) -> SseEvents | None:
    """The declared events of an SSE method (None for a JSON one); an SSE method must declare them."""
    if method not in handler.sse_methods:
        return None
    declared = handler.events.get(method)
    if declared is None:
        raise TypeError(f"{handler.__name__}.{method.lower()} answers text/event-stream but declares no `events`")
    return declared


def build_document(routes: list[Route]) -> JsonObject:
    """The OpenAPI 3.0 document for every route with its implemented methods."""
    paths: JsonObject = {}
    taken: set[str] = set()
    schemas: JsonObject = {"R": _ENVELOPE, "Error": _ERROR, "Confirmation": _CONFIRM}
    for r in routes:
        handler = r.handler
        if not issubclass(handler, ApiHandler):
            continue
        ops: JsonObject = {}
        for method in handler.implemented_methods():
            level = handler.access.get(method, "login")
            responses: JsonObject = {}
            op: JsonObject = {
                "summary": _summary(handler, method),
                "operationId": _operation_id(r.template, method, taken),
                "tags": list(handler.tags) or [r.template.split("/")[3] if r.template.count("/") > 2 else "misc"],
                "parameters": _path_params(r) + [dict(p) for p in getattr(handler, "query_params", {}).get(method, [])],
                "responses": responses,
            }
            if level == PUBLIC:
                op["security"] = []
            events = _events(handler, method)
            if events is not None:
                responses["200"] = {
                    "description": "Server-sent events, one frame per event kind (errors arrive as an `error` frame)",
                    "content": {"text/event-stream": {"schema": stream_ref(events, schemas, _oas30)}},
                }
            elif method in handler.download_methods:
                types = handler.download_types.get(method, ("application/octet-stream",))
                files: JsonObject = {t: {"schema": {"type": "string", "format": "binary"}} for t in types}
                answer = handler.answers.get(method)
                if answer is not None:  # the same route answers JSON in the envelope when the client asks for it
                    files["application/json"] = {"schema": answer_ref(answer, schemas, _oas30)}
                responses["200"] = {"description": "File bytes (or the JSON answer when JSON is asked for first)", "content": files}
            else:
                answer = handler.answers.get(method)
                typed = {"$ref": "#/components/schemas/R"} if answer is None else answer_ref(answer, schemas, _oas30)
                responses["200"] = {
                    "description": "Success envelope `{code:200, msg, data}`",
                    "content": {"application/json": {"schema": typed}, **getattr(handler, "more_answer_content", {}).get(method, {})},
                }
            model = handler.body_models.get(method)
            if model is not None:
                schema = _oas30(model.model_json_schema(ref_template="#/components/schemas/{model}"))
                assert isinstance(schema, dict)  # a model's schema is an object
                defs = schema.pop("$defs", {})
                hook = getattr(model, "openapi_schema", None)  # a rule written with refs to the models now in components
                if callable(hook):
                    hook(schema)
                int64_bounds([schema, defs])
                for name, sub in defs.items() if isinstance(defs, dict) else ():
                    schemas[name] = sub
                ref = model.__name__
                if ref in schemas and schemas[ref] != schema:  # same class name in two areas: qualify, never overwrite
                    ref = f"{model.__module__.split('.')[-2].title()}{model.__name__}"
                    schema["title"] = ref  # generators name the model from its title: two "FileText" would clash
                schemas[ref] = schema
                op["requestBody"] = {
                    # ApiHandler.json_body reads an empty body as {}: it is optional when {} is a valid body
                    "required": not _takes_empty_object(schema),
                    "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{ref}"}}},
                }
            add_inputs(handler, r.template, method, op)
            for code, text in _ERRORS.items():
                if code == "401" and level == PUBLIC and method not in handler.sse_methods:
                    continue
                content: JsonObject = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
                responses[code] = {"description": text, "content": content}
            if getattr(handler, "confirms", False):
                responses["409"] = {
                    "description": "Second confirmation needed",
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Confirmation"}}},
                }
            custom = getattr(handler, "openapi_responses", {}).get(method)
            if custom:  # a route answering in a client's own shape (the OpenAI door), not the envelope
                op["responses"] = _oas30(custom)
                extra = _oas30(getattr(handler, "openapi_schemas", {}))
                assert isinstance(extra, dict)  # a dict maps to a dict
                schemas.update(extra)
            else:
                fix_statuses(handler, r.template, method, op)
            ops[method.lower()] = op
        if ops:
            paths[r.template] = ops
    return {
        "openapi": "3.0.3",
        "info": {
            "title": "Agent Platform API",
            "version": __version__,
            "description": "Self-hosted agent platform. Responses use the envelope `{code, msg, data}`; ids are "
            "Snowflake integers sent as strings. Authenticate with `Authorization: Bearer <JWT or mc_ PAT>`.",
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
    }


class ApiDocsHandler(ApiHandler):
    access = {"GET": PUBLIC}
    tags = ("Docs",)
    # the document itself, not the envelope: what client generators read
    openapi_responses = {
        "GET": {
            "200": {
                "description": "This OpenAPI 3.0 document",
                "content": {
                    "application/json": {
                        "schema": {
                            "type": "object",
                            "required": ["openapi", "info", "paths", "components"],
                            "properties": {
                                "openapi": {"type": "string"},
                                "info": {"type": "object"},
                                "paths": {"type": "object"},
                                "components": {"type": "object"},
                            },
                        }
                    }
                },
            },
            # what the base handler answers before the document is written (a body sent with the GET, a flood)
            **{
                code: {"description": _ERRORS[code], "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
                for code in ("413", "429", "500")
            },
        }
    }

    def get(self) -> None:
        """This OpenAPI document."""
        if self.platform.openapi_text is None:
            self.platform.openapi_text = dumps(build_document(self.platform.routes))
        self.finish(self.platform.openapi_text)
