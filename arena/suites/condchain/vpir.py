"""VPIR: a restricted evaluator for predicates over typed fact dictionaries (MM-CondChain).

A VPIR predicate is one Python *expression* over a fact dictionary whose keys are
bound as variables, e.g.

    len([o for o in objects if o["color"] == "red"]) == 2 and max(values) > 40

It is parsed with `ast` and interpreted node by node by this module (never
`eval`/`compile`), so only what is listed here can run:

- constants (str, int, float, bool, None), list/tuple/set/dict displays,
  subscripts and slices (`facts["key"]`, `xs[0]`, `xs[1:3]`);
- boolean logic (`and`, `or`, `not`), comparisons (`== != < <= > >= in not in is is not`),
  arithmetic (`+ - * / // %`, unary `-`/`+`) and `**` with a bounded result,
  conditional expressions (`a if c else b`);
- calls to len, set, any, all, min, max, sum, sorted only (keywords: `reverse`
  for sorted, `default` for min/max);
- list/set/dict comprehensions and generator expressions whose targets are plain
  names (they cannot rebind a fact or a function name).

Everything else is rejected before evaluation with a `VPIRError` naming the
construct and its position: attribute access, imports, `lambda`, assignment
expressions (`:=`), starred arguments, names that are neither facts nor
allowed functions, names starting with `_`. Evaluation is bounded too:
exponentiation, sequence repetition and the total number of steps have limits,
so a predicate cannot exhaust memory or time.
"""

from __future__ import annotations

import ast
import operator
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

ALLOWED_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "len": len, "set": set, "any": any, "all": all, "min": min, "max": max, "sum": sum, "sorted": sorted,
}
ALLOWED_KEYWORDS = {"sorted": {"reverse"}, "min": {"default"}, "max": {"default"}}
CONSTANT_NAMES = {"True": True, "False": False, "None": None}

MAX_SOURCE_CHARS = 4_000
MAX_EXPONENT = 256
MAX_POWER_BITS = 4_096
MAX_SEQUENCE = 100_000
MAX_STEPS = 200_000

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
}
_COMPARE: dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge, ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
    ast.Is: operator.is_, ast.IsNot: operator.is_not,
}
_UNARY: dict[type, Callable[[Any], Any]] = {ast.Not: operator.not_, ast.USub: operator.neg, ast.UAdd: operator.pos}
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)

_FORBIDDEN_HINTS: dict[type, str] = {
    ast.Attribute: "attribute access",
    ast.Lambda: "lambda",
    ast.NamedExpr: "assignment expression (:=)",
    ast.Starred: "starred expression",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
    ast.JoinedStr: "f-string",
    ast.FormattedValue: "f-string",
}


class VPIRError(ValueError):
    """A predicate that is not valid VPIR, or that failed or exceeded a limit while being evaluated."""


def _where(node: ast.AST) -> str:
    line, col = getattr(node, "lineno", None), getattr(node, "col_offset", None)
    return f"line {line} col {col + 1}" if line is not None and col is not None else "expression"


def _segment(source: str, node: ast.AST) -> str:
    text = ast.get_source_segment(source, node) or type(node).__name__
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(frozen=True)
class Predicate:
    """A parsed and checked VPIR expression; evaluate it with `evaluate(facts)`."""

    source: str
    tree: ast.Expression

    def evaluate(self, facts: Mapping[str, Any]) -> Any:
        return _Interpreter(self.source, facts).run(self.tree.body)

    def holds(self, facts: Mapping[str, Any]) -> bool:
        """Evaluate and require a boolean result."""
        value = self.evaluate(facts)
        if not isinstance(value, bool):
            raise VPIRError(f"predicate {self.source!r} evaluated to {type(value).__name__} {value!r}, not a bool")
        return value


def parse(source: str, names: Iterable[str] | None = None) -> Predicate:
    """Parse and check a VPIR expression. `names`, when given, are the fact keys it may use."""
    if not isinstance(source, str):
        raise VPIRError(f"a VPIR predicate must be a string, got {type(source).__name__}")
    if len(source) > MAX_SOURCE_CHARS:
        raise VPIRError(f"predicate is {len(source)} characters long; the limit is {MAX_SOURCE_CHARS}")
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as exc:
        raise VPIRError(f"line {exc.lineno} col {exc.offset}: not a Python expression ({exc.msg})") from None
    _Checker(source.strip(), None if names is None else set(names)).visit(tree)
    return Predicate(source.strip(), tree)


def evaluate(source: str, facts: Mapping[str, Any]) -> Any:
    """Check `source` against the fact keys and evaluate it."""
    return parse(source, names=facts.keys()).evaluate(facts)


def holds(source: str, facts: Mapping[str, Any]) -> bool:
    """Check, evaluate and require a boolean: the truth value of a VPIR layer condition."""
    return parse(source, names=facts.keys()).holds(facts)


class _Checker(ast.NodeVisitor):
    """Static whitelist: every node type, name and call target is checked before anything runs."""

    ALLOWED_NODES = (
        ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.UAdd,
        ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow,
        ast.Compare, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.In, ast.NotIn, ast.Is, ast.IsNot,
        ast.IfExp, ast.Call, ast.keyword, ast.Constant, ast.Name, ast.Load, ast.Store,
        ast.List, ast.Tuple, ast.Set, ast.Dict, ast.Subscript, ast.Slice,
        ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp, ast.comprehension,
    )

    def __init__(self, source: str, names: set[str] | None):
        self.source = source
        self.names = names
        self.bound: list[set[str]] = []

    def fail(self, node: ast.AST, what: str) -> None:
        raise VPIRError(f"{_where(node)}: {what} is not allowed in a VPIR predicate: {_segment(self.source, node)}")

    def generic_visit(self, node: ast.AST) -> None:
        if type(node) in _FORBIDDEN_HINTS:
            self.fail(node, _FORBIDDEN_HINTS[type(node)])
        if not isinstance(node, self.ALLOWED_NODES):
            self.fail(node, type(node).__name__)
        super().generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if not isinstance(node.value, (str, int, float, bool, type(None))):
            self.fail(node, f"a {type(node.value).__name__} constant")

    def visit_Name(self, node: ast.Name) -> None:
        name = node.id
        if name.startswith("_"):
            self.fail(node, f"the name {name!r} (names starting with '_')")
        if isinstance(node.ctx, ast.Store):
            return
        if name in CONSTANT_NAMES or any(name in scope for scope in self.bound):
            return
        if name in ALLOWED_FUNCTIONS:
            self.fail(node, f"using the function {name!r} as a value")
        if self.names is not None and name not in self.names:
            known = ", ".join(sorted(self.names)) or "none"
            raise VPIRError(f"{_where(node)}: unknown name {name!r} in a VPIR predicate (facts: {known}; "
                            f"functions: {', '.join(ALLOWED_FUNCTIONS)})")

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if not isinstance(func, ast.Name):
            self.visit(func)
        if not isinstance(func, ast.Name) or func.id not in ALLOWED_FUNCTIONS or self._shadowed(func.id):
            what = f"calling {_segment(self.source, func)}"
            raise VPIRError(f"{_where(node)}: {what} is not allowed in a VPIR predicate "
                            f"(allowed calls: {', '.join(ALLOWED_FUNCTIONS)})")
        for kw in node.keywords:
            if kw.arg is None or kw.arg not in ALLOWED_KEYWORDS.get(func.id, set()):
                self.fail(kw.value, f"keyword argument {kw.arg or '**'!r} of {func.id}()")
        for arg in node.args:
            self.visit(arg)
        for kw in node.keywords:
            self.visit(kw.value)

    def _shadowed(self, name: str) -> bool:
        return any(name in scope for scope in self.bound)

    def _visit_comprehension(self, node: ast.AST, elements: list[ast.AST]) -> None:
        scope: set[str] = set()
        self.bound.append(scope)
        try:
            for gen in node.generators:  # type: ignore[attr-defined]
                if gen.is_async:
                    self.fail(gen, "async comprehension")
                self.visit(gen.iter)
                for target in ast.walk(gen.target):
                    if isinstance(target, (ast.Tuple, ast.List, ast.Store)):
                        continue
                    if not isinstance(target, ast.Name):
                        self.fail(target, "a comprehension target other than plain names")
                    if target.id in ALLOWED_FUNCTIONS or target.id in CONSTANT_NAMES or target.id.startswith("_"):
                        self.fail(target, f"rebinding {target.id!r} in a comprehension")
                    if self.names is not None and target.id in self.names:
                        self.fail(target, f"rebinding the fact {target.id!r} in a comprehension")
                    scope.add(target.id)
                for cond in gen.ifs:
                    self.visit(cond)
            for element in elements:
                self.visit(element)
        finally:
            self.bound.pop()

    def visit_ListComp(self, node: ast.ListComp) -> None:
        self._visit_comprehension(node, [node.elt])

    visit_SetComp = visit_ListComp
    visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node: ast.DictComp) -> None:
        self._visit_comprehension(node, [node.key, node.value])


class _Interpreter:
    """Evaluates a checked tree with step, power and size limits."""

    def __init__(self, source: str, facts: Mapping[str, Any]):
        self.source = source
        self.scopes: list[dict[str, Any]] = [dict(facts)]
        self.steps = 0

    def fail(self, node: ast.AST, message: str) -> VPIRError:
        return VPIRError(f"{_where(node)}: {message} in {_segment(self.source, node)}")

    def run(self, node: ast.AST) -> Any:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise VPIRError(f"predicate needs more than {MAX_STEPS} evaluation steps")
        method = getattr(self, f"eval_{type(node).__name__}", None)
        if method is None:
            raise self.fail(node, f"{type(node).__name__} cannot be evaluated")
        try:
            return method(node)
        except VPIRError:
            raise
        except (TypeError, ValueError, KeyError, IndexError, ZeroDivisionError, OverflowError) as exc:
            raise self.fail(node, f"{type(exc).__name__}: {exc}") from None

    def lookup(self, node: ast.Name) -> Any:
        for scope in reversed(self.scopes):
            if node.id in scope:
                return scope[node.id]
        if node.id in CONSTANT_NAMES:
            return CONSTANT_NAMES[node.id]
        raise self.fail(node, f"unknown name {node.id!r}")

    def eval_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def eval_Name(self, node: ast.Name) -> Any:
        return self.lookup(node)

    def eval_List(self, node: ast.List) -> list:
        return [self.run(e) for e in node.elts]

    def eval_Tuple(self, node: ast.Tuple) -> tuple:
        return tuple(self.run(e) for e in node.elts)

    def eval_Set(self, node: ast.Set) -> set:
        return {self.run(e) for e in node.elts}

    def eval_Dict(self, node: ast.Dict) -> dict:
        return {self.run(k): self.run(v) for k, v in zip(node.keys, node.values)}  # type: ignore[arg-type]

    def eval_BoolOp(self, node: ast.BoolOp) -> Any:
        value: Any = None
        for operand in node.values:
            value = self.run(operand)
            if isinstance(node.op, ast.And) and not value:
                return value
            if isinstance(node.op, ast.Or) and value:
                return value
        return value

    def eval_UnaryOp(self, node: ast.UnaryOp) -> Any:
        return _UNARY[type(node.op)](self.run(node.operand))

    def eval_BinOp(self, node: ast.BinOp) -> Any:
        left, right = self.run(node.left), self.run(node.right)
        if isinstance(node.op, ast.Pow):
            self._check_power(node, left, right)
        if isinstance(node.op, ast.Mult):
            self._check_repeat(node, left, right)
        result = _BINARY[type(node.op)](left, right)
        if isinstance(result, (str, list, tuple)) and len(result) > MAX_SEQUENCE:
            raise self.fail(node, f"a result of {len(result)} items exceeds the limit of {MAX_SEQUENCE}")
        return result

    def _check_power(self, node: ast.AST, base: Any, exponent: Any) -> None:
        if not isinstance(exponent, (int, float)) or not isinstance(base, (int, float)):
            return
        if abs(exponent) > MAX_EXPONENT:
            raise self.fail(node, f"exponent {exponent} exceeds the limit of {MAX_EXPONENT}")
        if isinstance(base, int) and isinstance(exponent, int) and exponent > 0:
            if abs(base).bit_length() * exponent > MAX_POWER_BITS:
                raise self.fail(node, f"the power would exceed {MAX_POWER_BITS} bits")

    def _check_repeat(self, node: ast.AST, left: Any, right: Any) -> None:
        for seq, times in ((left, right), (right, left)):
            if isinstance(seq, (str, list, tuple)) and isinstance(times, int) and not isinstance(times, bool):
                if len(seq) * max(times, 0) > MAX_SEQUENCE:
                    raise self.fail(node, f"repeating a sequence to {len(seq) * times} items exceeds "
                                          f"the limit of {MAX_SEQUENCE}")

    def eval_Compare(self, node: ast.Compare) -> bool:
        left = self.run(node.left)
        for op, comparator in zip(node.ops, node.comparators):
            right = self.run(comparator)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True

    def eval_IfExp(self, node: ast.IfExp) -> Any:
        return self.run(node.body) if self.run(node.test) else self.run(node.orelse)

    def eval_Subscript(self, node: ast.Subscript) -> Any:
        container = self.run(node.value)
        return container[self.run(node.slice)]

    def eval_Slice(self, node: ast.Slice) -> slice:
        parts = [None if part is None else self.run(part) for part in (node.lower, node.upper, node.step)]
        return slice(*parts)

    def eval_Call(self, node: ast.Call) -> Any:
        name = node.func.id  # type: ignore[attr-defined]
        args = [self.run(a) for a in node.args]
        kwargs = {kw.arg: self.run(kw.value) for kw in node.keywords}
        for arg in args:
            if isinstance(arg, (list, tuple, set, dict, str)) and len(arg) > MAX_SEQUENCE:
                raise self.fail(node, f"an argument of {len(arg)} items exceeds the limit of {MAX_SEQUENCE}")
        return ALLOWED_FUNCTIONS[name](*args, **kwargs)

    def _iterate(self, generators: list[ast.comprehension], index: int, emit: Callable[[], None]) -> None:
        if index == len(generators):
            emit()
            return
        gen = generators[index]
        iterable = self.run(gen.iter)
        if not isinstance(iterable, (list, tuple, set, frozenset, dict, str)):
            raise self.fail(gen.iter, f"cannot iterate over {type(iterable).__name__}")
        for item in sorted(iterable, key=repr) if isinstance(iterable, (set, frozenset)) else iterable:
            self.steps += 1
            if self.steps > MAX_STEPS:
                raise VPIRError(f"predicate needs more than {MAX_STEPS} evaluation steps")
            self._bind(gen.target, item)
            if all(self.run(cond) for cond in gen.ifs):
                self._iterate(generators, index + 1, emit)

    def _bind(self, target: ast.AST, value: Any) -> None:
        if isinstance(target, ast.Name):
            self.scopes[-1][target.id] = value
            return
        items = list(value)
        elts = target.elts  # type: ignore[attr-defined]
        if len(items) != len(elts):
            raise self.fail(target, f"cannot unpack {len(items)} values into {len(elts)} names")
        for sub, item in zip(elts, items):
            self._bind(sub, item)

    def _comprehension(self, node: Any, make: Callable[[], Any], add: Callable[[Any], None]) -> None:
        self.scopes.append({})
        try:
            self._iterate(node.generators, 0, lambda: add(make()))
        finally:
            self.scopes.pop()

    def eval_ListComp(self, node: ast.ListComp) -> list:
        out: list = []
        self._comprehension(node, lambda: self.run(node.elt), out.append)
        return out

    eval_GeneratorExp = eval_ListComp

    def eval_SetComp(self, node: ast.SetComp) -> set:
        out: set = set()
        self._comprehension(node, lambda: self.run(node.elt), out.add)
        return out

    def eval_DictComp(self, node: ast.DictComp) -> dict:
        out: dict = {}
        self._comprehension(node, lambda: (self.run(node.key), self.run(node.value)),
                            lambda kv: out.__setitem__(kv[0], kv[1]))
        return out
