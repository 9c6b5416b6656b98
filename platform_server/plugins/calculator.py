"""The calculator plugin: exact arithmetic for agents (models are bad at it)."""

from __future__ import annotations

import ast
import math
import operator
from typing import Any, Callable
from platform_server.features.tools.registry import ToolError

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt,
    "log": math.log,
    "log10": math.log10,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "abs": abs,
    "round": round,
    "floor": math.floor,
    "ceil": math.ceil,
}
_CONSTANTS = {"pi": math.pi, "e": math.e}


def evaluate(expression: str, max_power: int = 10_000) -> float | int:
    """Evaluate arithmetic safely (no names but the listed functions and constants)."""

    def walk(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            left, right = walk(node.left), walk(node.right)
            if isinstance(node.op, ast.Pow) and abs(right) > max_power:
                raise ValueError("exponent too large")
            return _BINARY[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](walk(node.operand))
        if isinstance(node, ast.Name) and node.id in _CONSTANTS:
            return _CONSTANTS[node.id]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS and not node.keywords:
            return _FUNCTIONS[node.func.id](*[walk(a) for a in node.args])
        raise ValueError(f"unsupported expression element: {type(node).__name__}")

    if len(expression) > 500:
        raise ValueError("expression too long")
    return walk(ast.parse(expression, mode="eval"))


class CalculatorPlugin:
    name = "calculator"
    version = "1.0.0"
    description = "A `calculate` tool that evaluates arithmetic exactly."
    config_schema = {"precision": {"type": "integer", "minimum": 0, "maximum": 15, "default": 10}}

    def tools(self, config: dict[str, Any]) -> list[dict[str, Any]]:
        precision = int(config.get("precision", 10))

        async def calculate(args: dict[str, Any], ctx: Any) -> str:

            try:
                value = evaluate(str(args["expression"]))
            except (ValueError, SyntaxError, ZeroDivisionError, OverflowError, TypeError) as exc:
                raise ToolError(f"cannot evaluate: {exc}")
            return str(round(value, precision)) if isinstance(value, float) else str(value)

        return [
            {
                "name": "calculate",
                "description": "Evaluate an arithmetic expression (+ - * / // % **, sqrt, log, sin, cos, pi, e).",
                "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]},
                "run": calculate,
            }
        ]


plugin = CalculatorPlugin()
