"""Metric expressions of ``paper.toml``: ``{metric}`` references, + - * /, abs, min, max.

The format is in ``docs/reproduce.md`` ("Expressions"). Parsing checks the
syntax tree against a short allow-list, so a paper file cannot run code.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

_REFERENCE = re.compile(r"\{([^{}]*)\}")
# name -> (fewest, most) arguments
_FUNCTIONS: dict[str, tuple[int, int | None]] = {"abs": (1, 1), "min": (2, None), "max": (2, None)}
_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}
_CALLS: dict[str, Callable[[list[float]], float]] = {
    "abs": lambda args: abs(args[0]),
    "min": min,
    "max": max,
}
_ALLOWED = "numbers, + - * /, unary minus, parentheses, abs, min, max and {metric} references"


@dataclass(frozen=True)
class _Expr:
    """A metric expression: its references and its checked syntax tree."""

    refs: tuple[tuple[str | None, str], ...]  # (experiment or None for the own one, metric)
    tree: ast.expr
    prefix: str  # reference i is the name f"{prefix}{i}" in the tree

    def evaluate(self, values: Sequence[float | None]) -> float | None:
        """The value with reference i set to ``values[i]``.

        None when a value is missing, on a division by zero or a result that
        is not finite.
        """
        if any(v is None for v in values):
            return None
        known = [float(v) for v in values if v is not None]
        try:
            result = self._eval(self.tree, known)
        except (ZeroDivisionError, OverflowError):
            return None
        return result if math.isfinite(result) else None

    def _eval(self, node: ast.expr, values: Sequence[float]) -> float:
        # Every node kind below was admitted by `_check_node`.
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return float(node.value)
        if isinstance(node, ast.Name):
            return values[int(node.id[len(self.prefix) :])]
        if isinstance(node, ast.UnaryOp):
            return -self._eval(node.operand, values)
        if isinstance(node, ast.BinOp):
            op = _BINARY[type(node.op)]
            return op(self._eval(node.left, values), self._eval(node.right, values))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            return _CALLS[node.func.id]([self._eval(a, values) for a in node.args])
        raise AssertionError(f"unchecked node {ast.dump(node)}")


def _check_node(node: ast.AST, prefix: str, n_refs: int) -> None:
    """Raise ValueError unless ``node`` is made of the allowed syntax only."""
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise ValueError(f"`{node.value!r}` is not a number (allowed: {_ALLOWED})")
        return
    if isinstance(node, ast.Name):
        index = node.id[len(prefix) :]
        if node.id.startswith(prefix) and index.isdigit() and int(index) < n_refs:
            return
        raise ValueError(f"unknown name `{node.id}` (write a metric in braces: {{flow:...}})")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        _check_node(node.operand, prefix, n_refs)
        return
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        _check_node(node.left, prefix, n_refs)
        _check_node(node.right, prefix, n_refs)
        return
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS:
            what = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
            raise ValueError(f"unknown function `{what}` (allowed: abs, min, max)")
        fewest, most = _FUNCTIONS[node.func.id]
        n = len(node.args)
        if node.keywords or n < fewest or (most is not None and n > most):
            count = f"{fewest}" if most == fewest else f"{fewest} or more"
            raise ValueError(f"`{node.func.id}` takes {count} argument(s), without names")
        for arg in node.args:
            _check_node(arg, prefix, n_refs)
        return
    raise ValueError(f"`{ast.unparse(node)}` is not allowed (allowed: {_ALLOWED})")


def _parse_expr(text: str) -> _Expr | None:
    """A metric with ``{...}`` references as an expression; None for a plain metric.

    Raises:
        ValueError: The expression is malformed or uses syntax not allowed.
    """
    if "{" not in text and "}" not in text:
        return None
    refs: list[tuple[str | None, str]] = []
    # A name the text cannot hold, so a user cannot write a reference's name.
    prefix = "_ref"
    while prefix in text:
        prefix += "_"

    def name_of(match: re.Match[str]) -> str:
        ref = match.group(1).strip()
        head, sep, rest = ref.partition(":")
        if sep and head not in ("flow", "link"):
            if not head or not rest:
                raise ValueError(f"reference `{{{ref}}}`: expected `{{<experiment>:<metric>}}`")
            refs.append((head, rest))
        elif not ref:
            raise ValueError("empty reference `{}`")
        else:
            refs.append((None, ref))
        return f" {prefix}{len(refs) - 1} "

    body = _REFERENCE.sub(name_of, text)
    if "{" in body or "}" in body:
        raise ValueError(f"`{text}`: unbalanced or nested braces")
    try:
        tree = ast.parse(body.strip(), mode="eval")
    except SyntaxError as e:
        raise ValueError(f"`{text}`: syntax error ({e.msg})") from None
    _check_node(tree.body, prefix, len(refs))
    return _Expr(tuple(refs), tree.body, prefix)
