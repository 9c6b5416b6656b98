"""The calculator plugin: exact arithmetic for agents (models are bad at it).

Python integers are unbounded, so a short expression such as `(9**9999)**999` asks for a
31-million-bit number and seconds of CPU. Every operation is therefore checked before it runs:
an integer result may not exceed `MAX_INT_BITS` (estimated from the operands' sizes, so nothing
huge is ever computed), `round` takes at most `MAX_NDIGITS` digits, and the whole evaluation has a
time budget. It runs in the executor, so even the bounded work never holds the IOLoop.
"""

from __future__ import annotations

import ast
import math
import operator
import time
from typing import Any, Callable

from platform_server.blocking import run_blocking
from platform_server.features.tools.registry import ToolError

MAX_INT_BITS = 14_000  # about 4,200 decimal digits: below Python's 4,300-digit int-to-text limit
MAX_NDIGITS = 100  # round(x, n): |n| above this asks for 10**|n| (round(1, -10**9) never ends)
TIME_BUDGET_S = 1.0  # a bounded evaluation takes milliseconds; this catches what the bounds miss
MAX_EXPRESSION_CHARS = 500

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


def _bits(value: Any) -> int:
    """Bits of an integer operand (a float counts as none: float arithmetic overflows, it never grows)."""
    return abs(value).bit_length() if isinstance(value, int) else 0


def _check_binary(op: ast.operator, left: Any, right: Any, max_power: int) -> None:
    """Refuse an integer operation whose result would exceed MAX_INT_BITS, before it is computed."""
    if isinstance(op, ast.Pow):
        if isinstance(right, int) and abs(right) > max_power:
            raise ValueError(f"exponent too large (at most {max_power})")
        if isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1:
            if (_bits(left) - 1) * right > MAX_INT_BITS:  # the result has at least this many bits
                raise ValueError(f"result too large (more than {MAX_INT_BITS} bits)")
    elif isinstance(op, ast.Mult) and isinstance(left, int) and isinstance(right, int):
        if _bits(left) + _bits(right) > MAX_INT_BITS + 1:
            raise ValueError(f"result too large (more than {MAX_INT_BITS} bits)")


def _check_call(name: str, args: list[Any]) -> None:
    if name == "round" and len(args) > 1 and isinstance(args[1], int) and abs(args[1]) > MAX_NDIGITS:
        raise ValueError(f"round: at most {MAX_NDIGITS} digits")


def evaluate(expression: str, max_power: int = 10_000) -> float | int:
    """Evaluate arithmetic safely (no names but the listed functions and constants), within size and time bounds."""
    deadline = time.monotonic() + TIME_BUDGET_S

    def walk(node: ast.AST) -> Any:
        if time.monotonic() > deadline:
            raise ValueError(f"took longer than {TIME_BUDGET_S:g} s")
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            if _bits(node.value) > MAX_INT_BITS:
                raise ValueError(f"number too large (more than {MAX_INT_BITS} bits)")
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            left, right = walk(node.left), walk(node.right)
            _check_binary(node.op, left, right, max_power)
            return _BINARY[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](walk(node.operand))
        if isinstance(node, ast.Name) and node.id in _CONSTANTS:
            return _CONSTANTS[node.id]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS and not node.keywords:
            args = [walk(a) for a in node.args]
            _check_call(node.func.id, args)
            return _FUNCTIONS[node.func.id](*args)
        raise ValueError(f"unsupported expression element: {type(node).__name__}")

    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ValueError("expression too long")
    return walk(ast.parse(expression, mode="eval"))


def _calculate(expression: str, precision: int) -> str:
    """Evaluate and format (blocking: the executor runs it)."""
    try:
        value = evaluate(expression)
        return str(round(value, precision)) if isinstance(value, float) else str(value)
    except (ValueError, SyntaxError, ZeroDivisionError, OverflowError, TypeError, RecursionError, MemoryError) as exc:
        raise ToolError(f"cannot evaluate: {exc}")


class CalculatorPlugin:
    name = "calculator"
    version = "1.0.0"
    description = "A `calculate` tool that evaluates arithmetic exactly."
    config_schema = {"precision": {"type": "integer", "minimum": 0, "maximum": 15, "default": 10}}

    def tools(self, config: dict[str, Any]) -> list[dict[str, Any]]:
        precision = int(config.get("precision", 10))

        async def calculate(args: dict[str, Any], ctx: Any) -> str:
            return await run_blocking(_calculate, str(args["expression"]), precision)

        return [
            {
                "name": "calculate",
                "description": "Evaluate an arithmetic expression (+ - * / // % **, sqrt, log, sin, cos, pi, e).",
                "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]},
                "run": calculate,
            }
        ]


plugin = CalculatorPlugin()
