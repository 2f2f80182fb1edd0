"""Regenerate docs/pytorch_compat.md: torch's public names, module by module, and which ones cupynet has.

The modules are those `cupynet run` maps (cupynet.run.TORCH_MODULES); the names come from the
installed torch (its ``__all__`` where it has one, else its public attributes, less the modules and
typing helpers it merely imports). For each name the doc says where cupynet defines it (callables) or
that it has it, or ``—`` when it does not. The section between the HAND-WRITTEN markers (the
runner's notes and the real programs tried) is kept as it is.

Usage (from the repository root, with torch installed):
    PYTHONPATH=. python scripts/gen_pytorch_compat.py           # write docs/pytorch_compat.md
    PYTHONPATH=. python scripts/gen_pytorch_compat.py --check   # exit 1 when the committed doc is stale
"""

from __future__ import annotations

import argparse
import importlib
import pathlib
import sys
import types
import warnings

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "pytorch_compat.md"
BEGIN, END = "<!-- BEGIN HAND-WRITTEN -->", "<!-- END HAND-WRITTEN (the tables below are generated) -->"
MISSING = "—"


def public_names(module) -> list:
    """The public names of a torch module, sorted.

    Args:
        module: an imported torch module.
    """
    names = getattr(module, "__all__", None)
    if names is None:
        # NOTE: submodules are left out: one shows up as an attribute only once something imported it, so
        # listing them made the table depend on what ran before (each mapped submodule has its own table)
        names = [n for n in dir(module) if not n.startswith("_") and _is_own(module, getattr(module, n, None))
                 and not isinstance(getattr(module, n, None), types.ModuleType)]
    # NOTE: torch.backends.cudnn is an instance of a ModuleType subclass whose settings are class attributes
    settings = set(dir(type(module))) - set(dir(types.ModuleType))
    return sorted(set(names) | {n for n in settings if not n.startswith("_")})


def _is_own(module, value) -> bool:
    """False for what a module only imports: other libraries' modules and typing helpers."""
    if isinstance(value, types.ModuleType):
        return value.__name__.startswith("torch.")
    return getattr(value, "__module__", None) not in ("typing", "typing_extensions", "collections.abc")


def _kind(value) -> str:
    if isinstance(value, types.ModuleType):
        return "module"
    if isinstance(value, type):
        return "class"
    return "function" if callable(value) else "value"


def where(cupynet_module, name: str) -> str:
    """Where cupynet has ``name`` (``module.qualname`` for callables, the module for modules), or ``—``.

    Args:
        cupynet_module: the cupynet module the torch module maps to (None: cupynet has none).
        name: the public name.
    """
    if cupynet_module is None or not hasattr(cupynet_module, name):
        return MISSING
    value = getattr(cupynet_module, name)
    if isinstance(value, types.ModuleType):
        return f"`{value.__name__}`"
    module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    if callable(value) and module and qualname and module.startswith("cupynet"):
        return f"`{module}.{qualname}`"
    return "yes"


def _import(name):
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def render_tables(torch_modules: dict) -> str:
    """The generated part: a summary line per module, then one table per module.

    Args:
        torch_modules: torch module name -> cupynet module name (cupynet.run.TORCH_MODULES).
    """
    import torch  # noqa: PLC0415 - the oracle; only the generator and its test need it

    # NOTE: every module first: importing a submodule sets it as its parent's attribute (cupynet.nn.parallel),
    # so the tables must not depend on what happened to be imported before
    for name in [*torch_modules, *torch_modules.values()]:
        _import(name)
    summary, tables = [], []
    for torch_name, cupynet_name in sorted(torch_modules.items()):
        theirs, ours = _import(torch_name), _import(cupynet_name)
        if theirs is None:
            summary.append(f"| `{torch_name}` | `{cupynet_name}` | (not in this torch) | |")
            continue
        rows = [(n, _kind(getattr(theirs, n, None)), where(ours, n)) for n in public_names(theirs)]
        have = sum(r[2] != MISSING for r in rows)
        summary.append(f"| `{torch_name}` | `{cupynet_name}`{'' if ours else ' (missing)'} | {have} / {len(rows)} | "
                       f"[table](#{torch_name.replace('.', '')}) |")
        tables.append(f"### {torch_name}\n\n| name | kind | cupynet |\n|---|---|---|\n"
                      + "".join(f"| `{n}` | {k} | {w} |\n" for n, k, w in rows))
    head = (f"## Generated: torch's public names and cupynet's (torch {torch.__version__})\n\n"
            "Regenerate with `PYTHONPATH=. python scripts/gen_pytorch_compat.py` (needs torch installed).\n\n"
            "| torch module | cupynet module | names cupynet has | |\n|---|---|---|---|\n" + "\n".join(summary) + "\n")
    return head + "\n" + "\n".join(tables)


def hand_written(text: str) -> str:
    """The hand-written section of a doc (markers included), or a placeholder when it has none.

    Args:
        text: the current doc text.
    """
    if BEGIN in text and END in text:
        return text[text.index(BEGIN):text.index(END) + len(END)]
    return f"{BEGIN}\n# cupynet and PyTorch\n\n(hand-written notes go here)\n\n{END}"


def generate(current: str) -> str:
    """The whole doc: the hand-written section of ``current``, then the generated tables.

    Args:
        current: the doc as it is now (its hand-written section is kept).
    """
    sys.path.insert(0, str(ROOT))
    from cupynet.compat.run import TORCH_MODULES  # noqa: PLC0415 - after the path is set

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NOTE: reading deprecated torch names warns; the doc lists them all
        return hand_written(current) + "\n\n" + render_tables(TORCH_MODULES)


def main(argv=None) -> int:
    """Write docs/pytorch_compat.md, or with --check report whether it is current.

    Args:
        argv: command-line arguments (default: sys.argv[1:]).
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the committed doc is stale")
    args = parser.parse_args(argv)
    current = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
    text = generate(current)
    if args.check:
        if current != text:
            print(f"{DOC} is stale; run: PYTHONPATH=. python scripts/gen_pytorch_compat.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(text, encoding="utf-8")
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
