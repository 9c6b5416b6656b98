"""The units plugin: conversions between common units of length, mass, temperature and data."""

from __future__ import annotations

from typing import Any

from platform_server.features.tools.registry import ToolError

_FACTORS = {
    "length": {"m": 1.0, "km": 1000.0, "cm": 0.01, "mm": 0.001, "mi": 1609.344, "yd": 0.9144, "ft": 0.3048, "in": 0.0254},
    "mass": {"kg": 1.0, "g": 0.001, "mg": 1e-6, "lb": 0.45359237, "oz": 0.028349523125, "t": 1000.0},
    "data": {"b": 1.0, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12, "kib": 1024.0, "mib": 1024.0**2, "gib": 1024.0**3},
}
_TEMPERATURE = {"c", "f", "k"}


def convert(value: float, source: str, target: str) -> float:
    s, t = source.lower(), target.lower()
    if s in _TEMPERATURE and t in _TEMPERATURE:
        celsius = {"c": value, "f": (value - 32) * 5 / 9, "k": value - 273.15}[s]
        return {"c": celsius, "f": celsius * 9 / 5 + 32, "k": celsius + 273.15}[t]
    for table in _FACTORS.values():
        if s in table and t in table:
            return value * table[s] / table[t]
    raise ValueError(f"cannot convert {source} to {target}")


class UnitsPlugin:
    name = "units"
    version = "1.0.0"
    description = "A `convert_units` tool for length, mass, temperature and data sizes."
    config_schema: dict[str, Any] = {}

    def tools(self, config: dict[str, Any]) -> list[dict[str, Any]]:
        async def convert_units(args: dict[str, Any], ctx: Any) -> str:

            try:
                return f"{convert(float(args['value']), str(args['from']), str(args['to'])):.6g} {args['to']}"
            except (ValueError, TypeError) as exc:
                raise ToolError(str(exc))

        return [
            {
                "name": "convert_units",
                "description": "Convert a value between units (m, km, mi, ft, kg, lb, C, F, K, MB, GiB, ...).",
                "parameters": {
                    "type": "object",
                    "properties": {"value": {"type": "number"}, "from": {"type": "string"}, "to": {"type": "string"}},
                    "required": ["value", "from", "to"],
                },
                "run": convert_units,
            }
        ]


plugin = UnitsPlugin()
