"""Plugins: shipped ones plus entry points (`platform_server.plugins`); enabling one registers its tools."""

from __future__ import annotations

import importlib.metadata
import logging
from typing import TYPE_CHECKING, Any

from platform_server.db import database, iso, utcnow
from platform_server.features.audit import service as audit
from platform_server.features.plugins.models import PluginState
from platform_server.features.tools.registry import ToolDefinition
from platform_server.serialize import GIVEN, Fields
from platform_server.web.context import Caller
from platform_server.web.errors import Conflict, NotFound

if TYPE_CHECKING:
    from platform_server.features.tools.registry import ToolRegistry

log = logging.getLogger(__name__)
ENTRY_POINT_GROUP = "platform_server.plugins"
BUILTIN = ("platform_server.plugins.calculator", "platform_server.plugins.units")


class PluginCatalog:
    """The plugins found at start and the tools each enabled one registered (platform.runtime(PLUGINS))."""

    def __init__(self, registry: ToolRegistry) -> None:
        self.registry = registry
        self.plugins: dict[str, tuple[Any, str]] = {}  # name -> (plugin object, source)
        self.registered: dict[str, list[str]] = {}

    def discover(self) -> None:
        for module_name in BUILTIN:
            obj = importlib.import_module(module_name).plugin
            self.plugins[obj.name] = (obj, "builtin")
        for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            try:
                obj = entry.load()
                self.plugins.setdefault(obj.name, (obj, "entry_point"))
            except Exception:  # noqa: BLE001 - a broken third-party plugin must not stop the server
                log.exception("plugin entry point %s failed to load", entry.name)

    def apply(self, name: str) -> None:
        """Register (enabled) or unregister (disabled) the plugin's tools to match its state."""

        for tool_name in self.registered.pop(name, []):
            self.registry.unregister(tool_name)
        state = PluginState.get_or_none(PluginState.name == name)
        if state is None or not state.enabled:
            return
        plugin, _ = self.plugins[name]
        names = []
        for spec in plugin.tools(effective_config(plugin, state.config)):
            self.registry.register(
                ToolDefinition(name=spec["name"], description=spec["description"], parameters=spec["parameters"], run=spec["run"], source="plugin")
            )
            names.append(spec["name"])
        self.registered[name] = names

    def get(self, name: str) -> Any:
        if name not in self.plugins:
            raise NotFound("Plugin not found")
        return self.plugins[name][0]


MASK = "******"  # a write-only setting as answers show it; sending it back keeps the stored value


def secret_keys(plugin: Any) -> set[str]:
    """Settings whose schema says `writeOnly: true` (API keys and the like): never shown, masked."""
    return {k for k, rule in plugin.config_schema.items() if rule.get("writeOnly")}


def shown_config(plugin: Any, config: dict[str, Any]) -> dict[str, Any]:
    hidden = secret_keys(plugin)
    return {k: (MASK if k in hidden and v not in (None, "") else v) for k, v in config.items()}


def effective_config(plugin: Any, stored: dict[str, Any] | None) -> dict[str, Any]:
    defaults = {k: v.get("default") for k, v in plugin.config_schema.items() if "default" in v}
    return {**defaults, **(stored or {})}


def validate_config(plugin: Any, config: dict[str, Any]) -> dict[str, Any]:
    """Check a config against the plugin's simple schema (`type`, `minimum`, `maximum`, `enum`). Each plugin declares
    its own (`configSchema`), which the document cannot tie to `{name}`: a refusal is a 409 (the plugin's rules are
    the state the request conflicts with), a body that is no JSON object a 400."""
    types: dict[str, type | tuple[type, ...]] = {"integer": int, "number": (int, float), "string": str, "boolean": bool}
    for key, value in config.items():
        rule = plugin.config_schema.get(key)
        if rule is None:
            raise Conflict(f"{key}: unknown setting of plugin {plugin.name}")
        expected = types.get(rule.get("type", "string"), str)
        if not isinstance(value, expected) or (rule.get("type") in ("integer", "number") and isinstance(value, bool)):
            raise Conflict(f"{key}: must be of type {rule.get('type', 'string')}")
        if "minimum" in rule and value < rule["minimum"] or "maximum" in rule and value > rule["maximum"]:
            raise Conflict(f"{key}: must be between {rule.get('minimum')} and {rule.get('maximum')}")
        if "enum" in rule and value not in rule["enum"]:
            raise Conflict(f"{key}: must be one of {rule['enum']}")
    return config


# A plugin with its stored state (enabled, config, update time), which the caller passes.
PLUGIN_FIELDS = Fields(
    name=GIVEN,
    version="version",
    description="description",
    source=GIVEN,
    enabled=GIVEN,
    config=GIVEN,
    configSchema="config_schema",
    tools=GIVEN,
    updateTime=GIVEN,
)


def to_dict(catalog: PluginCatalog, name: str) -> dict[str, Any]:
    plugin, source = catalog.plugins[name]
    state = PluginState.get_or_none(PluginState.name == name)
    return PLUGIN_FIELDS(
        plugin,
        name=name,
        source=source,
        enabled=bool(state and state.enabled),
        config=shown_config(plugin, effective_config(plugin, state.config if state else None)),
        tools=catalog.registered.get(name, []),
        updateTime=iso(state.update_time) if state else None,
    )


def list_all(catalog: PluginCatalog) -> list[dict[str, Any]]:
    return [to_dict(catalog, name) for name in sorted(catalog.plugins)]


def set_enabled(catalog: PluginCatalog, caller: Caller, name: str, enabled: bool) -> dict[str, Any]:
    catalog.get(name)
    with database.atomic():
        PluginState.insert(name=name, enabled=enabled, update_time=utcnow()).on_conflict(
            conflict_target=[PluginState.name], update={PluginState.enabled: enabled, PluginState.update_time: utcnow()}
        ).execute()
        audit.record(caller, "UPDATE", "PLUGIN", name, "enabled" if enabled else "disabled")
    catalog.apply(name)
    return to_dict(catalog, name)


def set_config(catalog: PluginCatalog, caller: Caller, name: str, config: dict[str, Any]) -> dict[str, Any]:
    plugin = catalog.get(name)
    state = PluginState.get_or_none(PluginState.name == name)
    stored = (state.config if state else None) or {}
    for key in secret_keys(plugin) & {k for k, v in config.items() if v == MASK}:
        if key not in stored:
            raise Conflict(f"{key}: has no stored value to keep")
        config = {**config, key: stored[key]}
    clean = validate_config(plugin, config)
    with database.atomic():
        PluginState.insert(name=name, config=clean, update_time=utcnow()).on_conflict(
            conflict_target=[PluginState.name], update={PluginState.config: clean, PluginState.update_time: utcnow()}
        ).execute()
        audit.record(caller, "UPDATE", "PLUGIN", name, "config: " + ", ".join(sorted(clean)))
    catalog.apply(name)
    return to_dict(catalog, name)
