"""cupynet's CuPy calls checked, without CuPy, against the table of CuPy 14's API.

The table (cupynet/emulated_cuda/cupy_api.json) is written from the real package by
scripts/gen_cupy_api.py. This test reads every ``cupynet/**/*.py`` with ``ast`` and checks each use of the
array module on the GPU path: ``xp.<name>``, ``xp.<sub>.<name>``, ``cupy.<...>``, ``cupyx.<...>``, the
methods of ufuncs, of a CuPy ``Generator`` and of arrays that plainly come from an array-module call.
A use counts when the name exists in CuPy, each keyword of the call is one CuPy's signature takes, and a
ufunc method is one that ufunc supports. Code that runs only on NumPy is skipped: the branches of
``if xp is numpy`` / ``type(a) is numpy.ndarray`` / ``xp.__name__ == "numpy"`` tests (and their ``else``,
``and``/``or`` and early-return forms), ``hasattr(x, "name")`` guards, and functions whose docstring
says "CPU only" or "NumPy only".
"""

from __future__ import annotations

import ast
import dataclasses
import json
import pathlib

import numpy
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
TABLE = json.loads((ROOT / "cupynet" / "emulated_cuda" / "cupy_api.json").read_text(encoding="utf-8"))

# NOTE: names that hold the array module by the codebase's convention, and calls and attributes giving it.
MODULE_NAMES = {"xp": "cupy", "gxp": "cupy", "cp": "cupy", "cupy": "cupy", "cupyx": "cupyx"}
MODULE_MAKERS = {"get_array_module", "xp_of", "cupy_or_none", "array_module_for", "cupy"}
GENERATOR_MAKERS = {"generator_for", "resolve_generator"}
UFUNC_METHODS = {"at", "reduce", "accumulate", "outer", "reduceat"}
# Module functions whose result is not an array (tuples, dtypes, shapes, host values, generators).
NOT_ARRAYS = {"asnumpy", "nonzero", "unique", "meshgrid", "broadcast_arrays", "divmod", "modf", "frexp",
              "unravel_index", "ix_", "split", "array_split", "hsplit", "vsplit", "dsplit", "histogram",
              "eigh", "eig", "qr", "svd", "slogdet", "lstsq", "result_type", "promote_types", "can_cast",
              "min_scalar_type", "shape", "ndim", "size", "isscalar", "broadcast_shapes", "get_array_module",
              "default_rng", "get_random_state", "errstate", "fuse", "where", "atleast_1d", "atleast_2d",
              "atleast_3d", "tril_indices", "triu_indices", "diag_indices", "get_default_memory_pool",
              "get_default_pinned_memory_pool"}
ARRAY_MODULES = {"cupy", "cupy.linalg", "cupy.fft", "cupy.random", "cupyx", "cupyx.scipy.special",
                 "cupy.lib.stride_tricks"}
# What NumPy arrays have and CuPy arrays lack (``ptp``, ``tofile``, ...): a use on a CuPy array fails.
NUMPY_ONLY_MEMBERS = {n for n in dir(numpy.ndarray) if not n.startswith("_")} - set(TABLE["ndarray"])
CPU_ONLY_MARKERS = ("cpu only", "numpy only")

SKIPPED_DIRS = {
    "cupynet/emulated_cuda": "the CuPy stand-in itself: its internals run on NumPy",
}
# "<file>: <use>" -> why it is allowed. Each entry must still match a real use (a stale one fails).
ALLOWED: dict = {}


@dataclasses.dataclass(frozen=True)
class Violation:
    """One use of a name, keyword or method that CuPy 14 lacks."""

    path: str
    line: int
    use: str
    problem: str

    @property
    def key(self):
        return f"{self.path}: {self.use}"

    def __str__(self):
        return f"{self.path}:{self.line}: {self.use}: {self.problem}"


@dataclasses.dataclass(frozen=True)
class Context:
    """Where a node sits: on a NumPy-only branch, under hasattr guards, in which scope."""

    numpy_only: bool = False
    guarded: frozenset = frozenset()
    scope: tuple = ()

    def but(self, numpy_only=False, guarded=frozenset()):
        return dataclasses.replace(self, numpy_only=self.numpy_only or numpy_only,
                                   guarded=self.guarded | frozenset(guarded))


def attribute_chain(node):
    """``(base, [names])`` of ``base.a.b.c``; a ``.xp`` attribute (a device's array module) is a base.

    Args:
        node: an ``ast.Attribute``.
    """
    names = []
    while isinstance(node, ast.Attribute) and node.attr != "xp":
        names.append(node.attr)
        node = node.value
    return node, names[::-1]


def call_name(node):
    """The called name of ``f(...)`` or ``obj.f(...)``, else None.

    Args:
        node: any expression.
    """
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def is_numpy_ref(node):
    """Whether ``node`` is ``numpy``/``np``, ``numpy.ndarray`` or the string ``"numpy"``.

    Args:
        node: a comparison operand.
    """
    if isinstance(node, ast.Name):
        return node.id in ("numpy", "np")
    if isinstance(node, ast.Attribute):
        return node.attr == "ndarray" and is_numpy_ref(node.value)
    return isinstance(node, ast.Constant) and node.value == "numpy"


def branch_facts(test, checker, ctx):
    """``(true_numpy_only, false_numpy_only, names hasattr-checked when true)`` of an ``if`` test.

    Args:
        test: the test expression.
        checker: the Checker (to tell array-module expressions).
        ctx: the Context of the test.
    """
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        t, f, _ = branch_facts(test.operand, checker, ctx)
        return f, t, frozenset()
    if isinstance(test, ast.BoolOp):
        facts = [branch_facts(v, checker, ctx) for v in test.values]
        ts, fs = [f[0] for f in facts], [f[1] for f in facts]
        if isinstance(test.op, ast.And):
            return any(ts), all(fs), frozenset().union(*(f[2] for f in facts))
        return all(ts), any(fs), frozenset()
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, left, right = test.ops[0], test.left, test.comparators[0]
        positive = isinstance(op, (ast.Is, ast.Eq))
        if isinstance(op, (ast.Is, ast.Eq, ast.IsNot, ast.NotEq)) and (is_numpy_ref(left) or is_numpy_ref(right)):
            return positive, not positive, frozenset()
        is_none = isinstance(right, ast.Constant) and right.value is None
        if isinstance(op, (ast.Is, ast.IsNot)) and is_none and checker.module_of(left, ctx):
            return positive, not positive, frozenset()
    if call_name(test) == "isinstance" and len(test.args) == 2 and is_numpy_ref(test.args[1]):
        return True, False, frozenset()
    if call_name(test) == "hasattr" and len(test.args) == 2 and isinstance(test.args[1], ast.Constant):
        return False, False, frozenset({test.args[1].value})
    return False, False, frozenset()


def terminates(stmts):
    """Whether a block always leaves (ends in return, raise, continue or break).

    Args:
        stmts: a list of statements.
    """
    return bool(stmts) and isinstance(stmts[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


def scope_nodes(node):
    """The nodes of a function's or module's own body, not those of nested functions and classes.

    Args:
        node: a FunctionDef, Lambda or Module.
    """
    todo = list(ast.iter_child_nodes(node))
    while todo:
        child = todo.pop()
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            yield child
            todo.extend(ast.iter_child_nodes(child))


def scope_bindings(node):
    """Name -> the values assigned to it in a scope: the value of ``name = value`` (also ``a, b = x, y``), else
    None (a parameter, a loop or ``with`` target, an unpacked call).

    Args:
        node: a FunctionDef, Lambda or Module.
    """
    nodes, values = list(scope_nodes(node)), {}
    for assign in (n for n in nodes if isinstance(n, ast.Assign)):
        for target in assign.targets:
            pairwise = isinstance(target, ast.Tuple) and isinstance(assign.value, ast.Tuple)
            values.update((id(t), v) for t, v in (zip(target.elts, assign.value.elts) if pairwise
                                                   else [(target, assign.value)]))
    args = getattr(node, "args", None)
    params = [] if args is None else args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]
    bindings = {a.arg: [None] for a in params if a is not None}
    for name in (n for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)):
        bindings.setdefault(name.id, []).append(values.get(id(name)))
    return bindings


class Checker:
    """Walks one module and collects its Violations.

    Args:
        path: the file's path, relative to the repository root.
    """

    def __init__(self, path):
        self.path = path
        self.found = []
        self.kinds = {}  # (id of a scope's bindings, name) -> its kind; None while being worked out

    def report(self, node, use, problem, ctx):
        if not ctx.numpy_only:
            self.found.append(Violation(self.path, node.lineno, use, problem))

    # --- what an expression is --------------------------------------------------------------------

    def binding_kind(self, name, ctx):
        """``"cupy"``/``"cupyx"``, ``"array"``, ``"generator"`` or None for a name, innermost scope first.

        Args:
            name: the identifier.
            ctx: the Context (its scope chain).
        """
        if name in MODULE_NAMES:
            return MODULE_NAMES[name]
        for depth in range(len(ctx.scope), 0, -1):
            bindings = ctx.scope[depth - 1]
            if name in bindings:
                key = (id(bindings), name)
                if key not in self.kinds:
                    self.kinds[key] = None
                    outer = dataclasses.replace(ctx, scope=ctx.scope[:depth])
                    kinds = {self.value_kind(v, outer) if v is not None else None for v in bindings[name]}
                    self.kinds[key] = kinds.pop() if len(kinds) == 1 else None
                return self.kinds[key]
        return None

    def value_kind(self, node, ctx):
        """What an assigned value is (as :meth:`binding_kind`), looking no further than its own shape.

        Args:
            node: the value.
            ctx: the Context.
        """
        if self.module_of(node, ctx):
            return "cupy"
        if self.is_generator(node, ctx):
            return "generator"
        if self.is_array(node, ctx):
            return "array"
        return None

    def module_of(self, node, ctx):
        """``"cupy"``/``"cupyx"`` when ``node`` is the array module, else None.

        Args:
            node: an expression.
            ctx: the Context.
        """
        if isinstance(node, ast.Name):
            kind = self.binding_kind(node.id, ctx)
            return kind if kind in ("cupy", "cupyx") else None
        if isinstance(node, ast.Attribute) and node.attr == "xp":
            return "cupy"
        return "cupy" if call_name(node) in MODULE_MAKERS else None

    def is_generator(self, node, ctx):
        """Whether ``node`` is a device generator (never one that a literal ``"cpu"`` asks for).

        Args:
            node: an expression.
            ctx: the Context.
        """
        if isinstance(node, ast.Name):
            return self.binding_kind(node.id, ctx) == "generator"
        if isinstance(node, ast.Attribute) and node.attr == "array_generator":
            return True
        if call_name(node) in GENERATOR_MAKERS:
            return not any(isinstance(a, ast.Constant) and a.value == "cpu" for a in node.args)
        if call_name(node) == "default_rng" and isinstance(node.func, ast.Attribute):
            return self.entry(node.func, ctx)[:2] == ("cupy.random", "default_rng")
        return False

    def is_array(self, node, ctx):
        """Whether ``node`` is plainly a CuPy array on the GPU path: an array-module call's result.

        Args:
            node: an expression.
            ctx: the Context.
        """
        if isinstance(node, ast.Name):
            return self.binding_kind(node.id, ctx) == "array"
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            return False
        module, name, info = self.entry(node.func, ctx)
        return (module in ARRAY_MODULES and info is not None and info["kind"] in ("function", "ufunc")
                and name not in NOT_ARRAYS)

    def resolve(self, node, ctx):
        """``(module, i, names)``: ``names[i]`` is the first name of the chain that is no module, ``module``
        the tabled module holding it; ``(None, None, names)`` when the chain is not on a tabled module.

        Args:
            node: an ``ast.Attribute``.
            ctx: the Context.
        """
        base, names = attribute_chain(node)
        module = self.module_of(base, ctx) if names else None
        for i, name in enumerate(names):
            if module not in TABLE["modules"]:
                break
            info = TABLE["modules"][module].get(name)
            if info is None or info["kind"] != "module":
                return module, i, names
            module = f"{module}.{name}"
        return None, None, names

    def entry(self, node, ctx):
        """``(module, name, table entry or None)`` of the name an attribute chain ends at.

        Args:
            node: an ``ast.Attribute``.
            ctx: the Context.
        """
        module, i, names = self.resolve(node, ctx)
        if module is None or i != len(names) - 1:
            return None, None, None
        return module, names[i], TABLE["modules"][module].get(names[i])

    # --- the checks -------------------------------------------------------------------------------

    def check_keywords(self, call, params, use, owner, ctx):
        if params is None:
            return
        for kw in call.keywords:
            if kw.arg is not None and kw.arg not in params:
                self.report(call, f"{use}({kw.arg}=)", f"{owner} takes no keyword {kw.arg!r}", ctx)

    def check_module_use(self, node, call, ctx):
        """``xp.<name>``, ``xp.<sub>.<name>``, ``xp.<ufunc>.<method>``.

        Args:
            node: the outermost ``ast.Attribute`` of the chain.
            call: the Call it is the function of, or None.
            ctx: the Context.
        """
        module, i, names = self.resolve(node, ctx)
        if module is None or names[i].startswith("__") or names[i] in ctx.guarded:
            return
        name, rest = names[i], names[i + 1:]
        use = ".".join([ast.unparse(attribute_chain(node)[0]), *names[: i + 1]])
        info = TABLE["modules"][module].get(name)
        if info is None:
            self.report(node, use, f"{module} has no {name!r}", ctx)
        elif info["kind"] == "ufunc" and rest and rest[0] in UFUNC_METHODS:
            key = name if module == "cupy" else f"{module}.{name}"
            if rest[0] not in TABLE["ufunc_methods"].get(key, []):
                self.report(node, f"{use}.{rest[0]}", f"{module}.{name} has no .{rest[0]}", ctx)
        elif not rest and call is not None and not info["varkw"]:
            self.check_keywords(call, info["params"], use, f"{module}.{name}", ctx)

    def check_member_use(self, node, call, ctx):
        """``array.<method>(...)`` and ``generator.<method>(...)`` on plain CuPy receivers.

        Args:
            node: an ``ast.Attribute``.
            call: the Call it is the function of, or None.
            ctx: the Context.
        """
        name, receiver = node.attr, node.value
        if name.startswith("_") or name in ctx.guarded:
            return
        label = ast.unparse(receiver) if isinstance(receiver, ast.Name) else "<array>"
        if self.is_array(receiver, ctx):
            info = TABLE["ndarray"].get(name)
            if info is None and name in NUMPY_ONLY_MEMBERS:
                self.report(node, f"{label}.{name}", f"cupy.ndarray has no {name!r}", ctx)
            elif info is not None and call is not None and not info["varkw"]:
                self.check_keywords(call, info["params"], f"{label}.{name}", f"cupy.ndarray.{name}", ctx)
        elif call is not None and self.is_generator(receiver, ctx):
            info = TABLE["random_generator"].get(name)
            label = ast.unparse(receiver) if isinstance(receiver, ast.Name) else "<generator>"
            if info is None:
                self.report(node, f"{label}.{name}", f"cupy.random.Generator has no {name!r}", ctx)
            elif not info["varkw"]:
                self.check_keywords(call, info["params"], f"{label}.{name}", f"Generator.{name}", ctx)

    # --- the walk ---------------------------------------------------------------------------------

    def visit_block(self, stmts, ctx):
        for stmt in stmts:
            self.visit(stmt, ctx)
            if isinstance(stmt, ast.If):
                t, f, _ = branch_facts(stmt.test, self, ctx)
                if (f and terminates(stmt.body)) or (t and terminates(stmt.orelse)):
                    ctx = ctx.but(numpy_only=True)  # NOTE: past an early exit only NumPy gets here

    def visit_function(self, node, ctx):
        for outer in node.args.defaults + node.args.kw_defaults + getattr(node, "decorator_list", []):
            if outer is not None:
                self.visit(outer, ctx)
        doc = ast.get_docstring(node) if not isinstance(node, ast.Lambda) else None
        cpu_only = any(marker in (doc or "").lower() for marker in CPU_ONLY_MARKERS)
        inner = dataclasses.replace(ctx.but(numpy_only=cpu_only), scope=(*ctx.scope, scope_bindings(node)))
        if isinstance(node, ast.Lambda):
            self.visit(node.body, inner)
        else:
            self.visit_block(node.body, inner)

    def visit(self, node, ctx):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return self.visit_function(node, ctx)
        if isinstance(node, (ast.If, ast.IfExp)):
            self.visit(node.test, ctx)
            t, f, guarded = branch_facts(node.test, self, ctx)
            for part, facts in ((node.body, (t, guarded)), (node.orelse, (f, ()))):
                if isinstance(part, list):
                    self.visit_block(part, ctx.but(*facts))
                else:
                    self.visit(part, ctx.but(*facts))
            return None
        if isinstance(node, ast.BoolOp):
            for value in node.values:
                self.visit(value, ctx)
                t, f, guarded = branch_facts(value, self, ctx)
                ctx = ctx.but(t, guarded) if isinstance(node.op, ast.And) else ctx.but(f)
            return None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            self.check_attribute(node.func, node, ctx)
            for child in [*node.args, *node.keywords]:
                self.visit(child, ctx)
            return None
        if isinstance(node, ast.Attribute):
            return self.check_attribute(node, None, ctx)
        for field, value in ast.iter_fields(node):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                self.visit_block(value, ctx)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        self.visit(item, ctx)
            elif isinstance(value, ast.AST) and field != "ctx":
                self.visit(value, ctx)
        return None

    def check_attribute(self, node, call, ctx):
        """Check the chain ending at ``node`` once, then walk what it stands on.

        Args:
            node: an ``ast.Attribute``.
            call: the Call it is the function of, or None.
            ctx: the Context.
        """
        base, names = attribute_chain(node)
        if names and self.module_of(base, ctx):
            self.check_module_use(node, call, ctx)
            return self.visit(base, ctx)
        self.check_member_use(node, call, ctx)
        return self.visit(node.value, ctx)


def check_source(source, path="<snippet>"):
    """The Violations in one module's source.

    Args:
        source: Python source text.
        path: the name to report.
    """
    tree = ast.parse(source)
    checker = Checker(path)
    checker.visit_block(tree.body, Context(scope=(scope_bindings(tree),)))
    return checker.found


def cupynet_violations():
    """Every Violation in ``cupynet/**/*.py`` outside SKIPPED_DIRS.

    Args:
        None.
    """
    found = []
    for file in sorted((ROOT / "cupynet").rglob("*.py")):
        path = file.relative_to(ROOT).as_posix()
        if not any(path.startswith(d + "/") for d in SKIPPED_DIRS):
            found += check_source(file.read_text(encoding="utf-8"), path)
    return found


def test_table_is_cupy_14():
    assert TABLE["cupy_version"].startswith("14.")
    assert {"cupy", "cupyx", "cupy.linalg", "cupy.random", "cupy.cuda"} <= set(TABLE["modules"])
    assert "initial" not in TABLE["modules"]["cupy"]["max"]["params"]
    assert TABLE["ufunc_methods"]["maximum"] == ["at", "outer"]


def test_cupynet_uses_only_what_cupy_14_has():
    found = cupynet_violations()
    bad = [v for v in found if v.key not in ALLOWED]
    assert not bad, "CuPy 14 lacks what these GPU-path uses need:\n" + "\n".join(map(str, bad))
    stale = set(ALLOWED) - {v.key for v in found}
    assert not stale, f"ALLOWED entries that match no use any more (remove them): {sorted(stale)}"


@pytest.mark.parametrize("source, use", [
    ("def f(a, xp):\n    return xp.max(a, initial=0)\n", "xp.max(initial=)"),
    ("def f(a, xp):\n    return xp.foo(a)\n", "xp.foo"),
    ("def f(a, xp):\n    return xp.linalg.foo(a)\n", "xp.linalg.foo"),
    ("def f(a, xp):\n    return xp.maximum.accumulate(a)\n", "xp.maximum.accumulate"),
    ("def f(a):\n    return get_array_module(a).add(a, a, where=a > 0)\n", "get_array_module(a).add(where=)"),
    ("def f(a):\n    m = xp_of(a).abs(a)\n    return m.max(-1, initial=0)\n", "m.max(initial=)"),
    ("def f(a):\n    return xp_of(a).abs(a).setflags(write=False)\n", "<array>.setflags"),
    ("def f(a):\n    gen = generator_for(a.device)\n    return gen.permutation(3)\n", "gen.permutation"),
    ("def f(dev):\n    with dev.xp.cuda.Device(0):\n        return dev.xp.cuda.foo()\n", "dev.xp.cuda.foo"),
    ("def f(a):\n    with a:\n        m = xp_of(a).abs(a)\n    return m.min(initial=0)\n", "m.min(initial=)"),
    ("def f(a):\n    xp = xp_of(a)\n    if xp is not numpy:\n        return xp.max(a, initial=0)\n    return a\n",
     "xp.max(initial=)"),
])
def test_reports_what_cupy_lacks(source, use):
    assert [v.use for v in check_source(source)] == [use]


@pytest.mark.parametrize("source", [
    "def f(a, xp):\n    if xp is numpy:\n        return xp.max(a, initial=0)\n    return xp.max(a)\n",
    "def f(a, xp):\n    if xp is not numpy:\n        return xp.max(a)\n    return xp.max(a, initial=0)\n",
    "def f(a, xp):\n    return xp.lexsort(a, axis=-1) if xp is numpy else xp.argsort(a, axis=1)\n",
    "def f(a, xp):\n    return xp is not numpy or xp.maximum.accumulate(a)\n",
    "def f(a):\n    if type(a) is numpy.ndarray:\n        return get_array_module(a).foo(a)\n",
    "def f(a):\n    if get_array_module(a).__name__ == 'numpy':\n        return get_array_module(a).foo(a)\n",
    "def f(gen):\n    gen = resolve_generator(gen, 'cpu', 'f')\n    return gen.permutation(3)\n",
    "def f(g, d):\n    g = resolve_generator(g, d, 'f')\n"
    "    return g.permutation(3) if hasattr(g, 'permutation') else 1\n",
    "def f(a, xp):\n    '''NumPy only: the host path.'''\n    return xp.max(a, initial=0)\n",
    "def f(a, xp):\n    return xp.cuda.Device(0), xp.linalg.solve(a, a), xp.add.at(a, 0, 1), xp.add.reduce(a)\n",
])
def test_numpy_paths_and_real_cupy_pass(source):
    assert check_source(source) == []


def test_failure_names_file_line_use_and_problem():
    (violation,) = check_source("import numpy\n\n\ndef f(a, xp):\n    return xp.max(a, initial=0)\n", "m.py")
    assert str(violation) == "m.py:5: xp.max(initial=): cupy.max takes no keyword 'initial'"
