"""Request bodies of the datasources routes."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, Field

from platform_server.ids import WHITESPACE
from platform_server.serialize import View

# an http(s) URL with a host (no brackets or spaces: "http://[" is no URL, and clients reading it back choke on it)
HTTP_URL_PATTERN = f"^https?://[^{WHITESPACE}/?#\\[\\]\\x00-\\x1f]+([/?#][^{WHITESPACE}\\x00-\\x1f]*)?$"
HTTP_URL_RE = re.compile(HTTP_URL_PATTERN)


class SqliteDatasourceConfig(BaseModel):
    """A SQLite datasource's config (service.check_sqlite_path)."""

    path: str = Field(min_length=1, description="Relative to <data_dir>/datasources/<workspaceId>", json_schema_extra={"pattern": "^[^\\x00]+$"})


class HttpDatasourceConfig(BaseModel):
    """An HTTP datasource's config (service.clean_config)."""

    baseUrl: str = Field(max_length=2000, json_schema_extra={"pattern": HTTP_URL_PATTERN})
    headers: dict[str, str] = Field(
        default_factory=dict, json_schema_extra={"maxProperties": 20, "additionalProperties": {"type": "string", "maxLength": 4000}}
    )


class DatasourceCreate(BaseModel):
    name: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_.-]+$")
    type: Literal["sqlite", "http"]
    description: str = Field(default="", max_length=2000)
    # read as the type's model when it is one, else as given: the service words the refusal (its messages name the field)
    config: SqliteDatasourceConfig | HttpDatasourceConfig | dict[str, Any]
    enabled: bool = True

    @classmethod
    def openapi_schema(cls, schema: dict[str, object]) -> None:
        """`config` stated per type, as a oneOf keyed by `type` of the named config models (web.openapi calls this once
        the models are components: inline objects in the branches made client generators build one model twice)."""
        properties = schema.get("properties")
        if isinstance(properties, dict):
            properties.pop("config", None)
        schema["oneOf"] = [
            {"properties": {"type": {"type": "string", "enum": [kind]}, "config": {"$ref": f"#/components/schemas/{model.__name__}"}}}
            for kind, model in (("sqlite", SqliteDatasourceConfig), ("http", HttpDatasourceConfig))
        ]

    def config_dict(self) -> dict[str, Any]:
        return self.config.model_dump() if isinstance(self.config, BaseModel) else self.config


class DatasourceUpdate(BaseModel):
    name: str | None = Field(default=None, min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_.-]+$")
    description: str | None = Field(default=None, max_length=2000)
    # one of the two configs as on create; which one the datasource takes is its stored type (service.update: a 409)
    config: dict[str, Any] | None = None
    enabled: bool | None = None

    @classmethod
    def openapi_schema(cls, schema: dict[str, object]) -> None:
        """`config` as a sqlite or an http config (anyOf: a body may carry both fields), by the named config models."""
        properties = schema.get("properties")
        if isinstance(properties, dict):
            refs: list[object] = [{"$ref": f"#/components/schemas/{m.__name__}"} for m in (SqliteDatasourceConfig, HttpDatasourceConfig)]
            # null (no change) as a branch of its own: `nullable` beside anyOf is not read in 3.0 (web.openapi._oas30)
            properties["config"] = {"anyOf": [*refs, {"nullable": True, "enum": [None]}]}


def config_kinds(raw: dict[str, Any]) -> set[str]:
    """The datasource types whose config (as the document states it) `raw` is."""
    kinds = set()
    path = raw.get("path")
    if isinstance(path, str) and path and "\x00" not in path:
        kinds.add("sqlite")
    url, headers = raw.get("baseUrl"), raw.get("headers", {})
    if isinstance(url, str) and len(url) <= 2000 and HTTP_URL_RE.fullmatch(url) and isinstance(headers, dict) and len(headers) <= 20:
        if all(isinstance(v, str) and len(v) <= 4000 for v in headers.values()):
            kinds.add("http")
    return kinds


class ToggleRequest(BaseModel):
    enabled: bool | None = Field(default=None, description="Absent: flip (as every toggle; the body is optional)")


class DatasourceTestView(View):
    success: bool
    message: str
    latencyMs: int
