"""Write cupynet/emulated_cuda/cupy_api.json: the public API of the installed CuPy, read from the package.

The emulated CUDA device exposes only what this table lists, and tests/test_cupy_api_static.py checks
cupynet's own CuPy calls against it. CuPy imports without a GPU, and nothing here launches a kernel.

Usage (from the repository root, with a Python that has the real CuPy; never a cupynet dependency):
    python3 -m venv /tmp/cupyvenv && /tmp/cupyvenv/bin/pip install cupy-cuda13x==14.2.0 numpy ml_dtypes
    /tmp/cupyvenv/bin/python scripts/gen_cupy_api.py

Each callable gets ``params`` (the names a keyword call may use), ``varargs`` and ``varkw``; ``params`` is
None where no signature could be read (the emulator then accepts any keyword). ``ufunc_methods`` is keyed
by the name in ``cupy`` and, for other modules' ufuncs, by the qualified name (``cupyx.rsqrt``).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import pathlib
import pkgutil
import re
import sys
import types

import numpy

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "cupynet" / "emulated_cuda" / "cupy_api.json"

MODULES = ("cupy", "cupyx", "cupy.linalg", "cupy.random", "cupy.fft", "cupy.cuda", "cupy.cuda.runtime",
           "cupy.cuda.device", "cupyx.scipy.special", "cupy.lib.stride_tricks")

SKIPPED = {"cupy": ("testing",)}  # NOTE: cupy.testing is for CuPy's own tests; cupynet never uses it

# NOTE: keywords tried on every ufunc call; the accepted ones are those CuPy pops before it counts the
# positional arguments. ``where=`` is refused (CuPy pops a private ``_where``, left out of the table).
UFUNC_KEYWORD_CANDIDATES = ("out", "dtype", "casting", "where", "order", "subok", "signature",
                            "axes", "axis", "keepdims", "initial")

# The element dtypes ufunc.at (and cupyx.scatter_add / scatter_max / scatter_min) accept, by ufunc. They are
# checked inside compiled code, so they are copied here from CuPy v14.2.0's
# cupy/_core/_routines_indexing.pyx, function _scatter_op_single (unchanged on CuPy's main branch). The
# check is on the target array's dtype (the values are cast to it first); intc/uintc/longlong/ulonglong
# there are int32/uint32/int64/uint64 on Linux. bfloat16 is in none of them. Indexing by a boolean mask
# takes another path with no dtype check. CuPy 14.0.x refuses int64 for add, maximum and minimum (14.1.0
# added it), and CuPy 13 refuses it too.
AT_DTYPES = {
    "add": ["int32", "int64", "float16", "float32", "float64", "uint32", "uint64"],
    "subtract": ["int32", "uint32"],
    "maximum": ["int32", "int64", "float32", "float64", "uint32", "uint64"],
    "minimum": ["int32", "int64", "float32", "float64", "uint32", "uint64"],
    "bitwise_and": ["int32", "int64", "uint32", "uint64"],
    "bitwise_or": ["int32", "int64", "uint32", "uint64"],
    "bitwise_xor": ["int32", "int64", "uint32", "uint64"],
}

_DOC_SIGNATURE = re.compile(r"^\s*([\w.]+)\((.*)\)\s*(->.*)?$")


def signature_from_inspect(obj):
    """``(params, varargs, varkw)`` from ``inspect.signature``, or None when it has none.

    Args:
        obj: a callable.
    """
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    kinds = inspect.Parameter
    params = [p.name for p in sig.parameters.values()
              if p.kind in (kinds.POSITIONAL_OR_KEYWORD, kinds.KEYWORD_ONLY) and p.name != "self"]
    varargs = any(p.kind is kinds.VAR_POSITIONAL for p in sig.parameters.values())
    varkw = any(p.kind is kinds.VAR_KEYWORD for p in sig.parameters.values())
    return params, varargs, varkw


def split_top_level(text):
    """Split ``text`` at the commas outside brackets and quotes.

    Args:
        text: a parameter list.
    """
    parts, depth, quote, start = [], 0, None, 0
    for i, ch in enumerate(text):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return parts + [text[start:]]


def drop_c_types(text):
    """A Cython parameter list without its C types (``int axis=-1`` becomes ``axis=-1``).

    Args:
        text: a parameter list.
    """
    out = []
    for part in split_top_level(text):
        head, eq, default = part.partition("=")
        words = head.replace("*", " * ").split()
        stars = "".join(w for w in words if w == "*") if words and words[0] == "*" else ""
        name = words[-1] if words else ""
        out.append(f"{stars}{name if name != '*' else ''}{eq}{default}")
    return ", ".join(out)


def parse_arguments(text):
    """The ``ast.arguments`` of a parameter list as Python or Cython writes it, or None.

    Args:
        text: what stands between the parentheses.
    """
    for candidate in (text, drop_c_types(text)):
        try:
            return ast.parse(f"def _f({candidate}): pass").body[0].args
        except SyntaxError:
            continue
    return None


def signature_from_doc(obj, name):
    """``(params, varargs, varkw)`` from a docstring whose first line is ``name(args)``, or None.

    Cython embeds such a line (``_ndarray_base.max(self, axis=None, out=None, keepdims=False)``).

    Args:
        obj: a callable.
        name: the name the line must carry (its last dotted part), or ``__init__``.
    """
    lines = (getattr(obj, "__doc__", None) or "").strip().splitlines()
    match = _DOC_SIGNATURE.match(lines[0].replace("\\", "")) if lines else None
    if match is None or match.group(1).split(".")[-1] not in (name, "__init__"):
        return None
    args = parse_arguments(match.group(2))
    if args is None:
        return None
    params = [a.arg for a in args.args + args.kwonlyargs if a.arg != "self"]
    return params, args.vararg is not None, args.kwarg is not None


def call_signature(obj, name):
    """``(params, varargs, varkw)`` of a callable; ``(None, False, False)`` when it cannot be read.

    Args:
        obj: a function, builtin, method descriptor or class.
        name: its public name.
    """
    found = signature_from_inspect(obj)
    if found is None or (found[1] and found[2]):  # NOTE: a (*args, **kwargs) wrapper may document the real one
        targets = (obj, obj.__init__) if isinstance(obj, type) else (obj,)
        found = next(filter(None, (signature_from_doc(t, name) for t in targets)), found)
    return found or (None, False, False)


def entry(kind, signature=(None, False, False)):
    """One table entry.

    Args:
        kind: what the name is.
        signature: ``(params, varargs, varkw)``.
    """
    params, varargs, varkw = signature
    return {"kind": kind, "params": params, "varargs": varargs, "varkw": varkw}


def ufunc_keywords(uf):
    """The keywords ``uf(...)`` accepts, found by calling it with no positional argument.

    Args:
        uf: a ``cupy.ufunc``.
    """
    accepted = []
    for kw in UFUNC_KEYWORD_CANDIDATES:
        try:
            uf(**{kw: None})
        except TypeError as e:  # NOTE: an accepted keyword gets past parsing to the argument count check
            if "Wrong number of arguments" in str(e):
                accepted.append(kw)
            elif "Wrong arguments" not in str(e):
                raise
    return accepted


def is_dtype(obj):
    """Whether ``obj`` is a scalar type (``cupy.float32``) or ``numpy.dtype`` itself.

    Args:
        obj: a module attribute.
    """
    return obj is numpy.dtype or (isinstance(obj, type) and issubclass(obj, numpy.generic))


def describe(obj, name, cupy):
    """The table entry for one module attribute.

    Args:
        obj: the attribute.
        name: its name.
        cupy: the cupy module.
    """
    if isinstance(obj, types.ModuleType):
        return entry("module")
    if isinstance(obj, cupy.ufunc):
        return entry("ufunc", (ufunc_keywords(obj), True, False))
    if is_dtype(obj):
        return entry("dtype")
    if isinstance(obj, type):
        return entry("class", call_signature(obj, name))
    if callable(obj):
        return entry("function", call_signature(obj, name))
    return entry("constant")


def own_module(obj):
    """Whether a module attribute that is a module belongs to CuPy (not ``numpy`` imported as ``np``).

    Args:
        obj: the attribute.
    """
    return not isinstance(obj, types.ModuleType) or obj.__name__.split(".")[0] in ("cupy", "cupyx", "cupy_backends")


def lazy_names(module):
    """Public names of ``module`` that ``dir`` misses: submodules not imported yet, names its ``__getattr__`` makes.

    CuPy loads on first use what needs the CUDA libraries (``cupy.cuda.nccl``, ``cupy.cuda.cublas``,
    ``cupy.random.Generator``).

    Args:
        module: a package.
    """
    names = {m.name for m in pkgutil.iter_modules(getattr(module, "__path__", []))}
    path = pathlib.Path(module.__file__ or "")
    source = path.read_text(encoding="utf-8") if path.suffix == ".py" else ""
    if "def __getattr__" in source:
        names |= set(re.findall(r"key == '(\w+)'", source))
    return sorted(n for n in names if not n.startswith("_"))


def module_table(module_name, cupy):
    """The public names of one module, each with how it may be called.

    Args:
        module_name: dotted name.
        cupy: the cupy module.
    """
    module = importlib.import_module(module_name)
    table = {}
    for name in dir(module):
        if name.startswith("_") or name in SKIPPED.get(module_name, ()):
            continue
        obj = getattr(module, name)
        if own_module(obj):
            table[name] = describe(obj, name, cupy)
    for name in lazy_names(module):
        if name not in table and name not in SKIPPED.get(module_name, ()):
            table[name] = lazy_entry(module, name, cupy)
    return table


def lazy_entry(module, name, cupy):
    """The entry of a name that ``module`` loads on first use.

    Args:
        module: the module.
        name: the name.
        cupy: the cupy module.
    """
    try:
        return describe(getattr(module, name), name, cupy)
    except (ImportError, AttributeError, RuntimeError):
        # NOTE: what fails to load here are submodules needing CUDA libraries absent (nccl, cufft, ...)
        return entry("module")


def member_table(cls):
    """Methods, properties and attributes of a class: public names and the dunders ``object`` lacks.

    Args:
        cls: the class.
    """
    table = {}
    for name in dir(cls):
        dunder = name.startswith("__") and name.endswith("__") and not name.startswith("__pyx")
        if (name.startswith("_") and not dunder) or (dunder and hasattr(object, name)):
            continue
        obj = inspect.getattr_static(cls, name)
        if isinstance(obj, (property, types.GetSetDescriptorType)):
            table[name] = entry("property")
        elif callable(getattr(cls, name)):
            table[name] = entry("method", call_signature(getattr(cls, name), name))
        else:
            table[name] = entry("attribute")
    return table


class PastCheckError(Exception):
    """A ufunc method got past its support check and touched its array argument."""


class Probe:
    """A stand-in array that raises PastCheckError on any attribute it is asked for."""

    def __getattr__(self, name):
        raise PastCheckError(name)


def ufunc_methods(uf):
    """Which of at/reduce/accumulate/outer/reduceat ``uf`` really supports.

    CuPy's ufunc has all five attributes; the unsupported ones raise NotImplementedError before they touch
    their array argument. A probe object that raises on any attribute tells the two apart without a GPU.

    Args:
        uf: a ``cupy.ufunc``.
    """
    calls = {"at": (Probe(), 0, 1), "reduce": (Probe(),), "accumulate": (Probe(),), "reduceat": (Probe(), [0])}
    supported = []
    for method, args in calls.items():
        try:
            getattr(uf, method)(*args)
        except PastCheckError:
            supported.append(method)
        except NotImplementedError:
            pass
    # NOTE: outer reshapes with cupy.array (a GPU allocation) and then calls the ufunc on two operands,
    # so it works exactly for the ufuncs of two inputs.
    if uf.nin == 2:
        supported.append("outer")
    return sorted(supported)


def all_ufunc_methods(modules, cupy):
    """``ufunc_methods`` for every ufunc in the tabled modules.

    Args:
        modules: dotted module name -> its table.
        cupy: the cupy module.
    """
    out = {}
    for module_name, table in modules.items():
        module = importlib.import_module(module_name)
        for name, info in table.items():
            if info["kind"] == "ufunc":
                key = name if module_name == "cupy" else f"{module_name}.{name}"
                out[key] = ufunc_methods(getattr(module, name))
    return out


def check_at_dtypes(cupy):
    """Fail when the ufuncs that have a scatter op are not those AT_DTYPES lists.

    Args:
        cupy: the cupy module.
    """
    with_scatter = {n for n in dir(cupy) if isinstance(getattr(cupy, n), cupy.ufunc)
                    and getattr(cupy, n)._scatter_op is not None}
    if with_scatter != set(AT_DTYPES):
        raise SystemExit(f"ufunc.at support changed: {sorted(with_scatter)} vs AT_DTYPES {sorted(AT_DTYPES)}")


def build():
    """The whole table, as a dict.

    Args:
        None.
    """
    import cupy  # noqa: PLC0415 - only the generator's venv has it

    modules = {name: module_table(name, cupy) for name in MODULES}
    check_at_dtypes(cupy)
    return {
        "cupy_version": cupy.__version__,
        "generated_by": "scripts/gen_cupy_api.py",
        "modules": modules,
        "ndarray": member_table(cupy.ndarray),
        "ufunc_methods": all_ufunc_methods(modules, cupy),
        "at_dtypes": AT_DTYPES,
        "random_generator": {k: v for k, v in member_table(cupy.random.Generator).items() if v["kind"] == "method"},
    }


def unknown_names(data):
    """Dotted names of the callables whose params could not be read.

    Args:
        data: the table.
    """
    callable_kinds = ("function", "ufunc", "class", "method")
    sections = {f"{m}.": t for m, t in data["modules"].items()}
    sections["ndarray."] = data["ndarray"]
    sections["Generator."] = data["random_generator"]
    return [prefix + name for prefix, table in sections.items() for name, info in table.items()
            if info["kind"] in callable_kinds and info["params"] is None]


def main() -> int:
    """Write the table and print how many callables have unknown params.

    Args:
        None.
    """
    data = build()
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text, encoding="utf-8")
    total = sum(len(t) for t in data["modules"].values()) + len(data["ndarray"]) + len(data["random_generator"])
    unknown = unknown_names(data)
    print(f"wrote {OUT.relative_to(ROOT)} ({len(text) // 1024} KiB, CuPy {data['cupy_version']}): "
          f"{total} names, {len(unknown)} callables with params null")
    for name in unknown:
        print(f"  params null: {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
