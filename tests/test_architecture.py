"""The architecture contract: the layers of shared/DESIGN.md, checked by import-linter on every test run.

``.importlinter`` (repository root) lists the layers, top to bottom, and the few
imports that go up at run time on purpose. A change that makes a lower layer
import a higher one, or two packages import each other, or any package but the
command line import the compatibility surface (``cupynet.compat``), fails here. So does an
op whose public function has wandered away from its class.
"""

import ast
import configparser
import os
import pathlib
import pkgutil
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(config_filename=sys.argv[1]))"


def lint(config):
    return subprocess.run([sys.executable, "-c", RUN, str(config)], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": ROOT}, timeout=300)


def test_the_layers_and_the_no_cycle_rule_hold():
    out = lint(os.path.join(ROOT, ".importlinter"))
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "3 kept, 0 broken" in out.stdout, out.stdout[-2000:]


def test_each_contract_ignores_only_the_named_upward_imports():
    config = configparser.ConfigParser()
    config.read(os.path.join(ROOT, ".importlinter"))
    for name in ("importlinter:contract:layers", "importlinter:contract:acyclic"):
        ignored = config[name]["ignore_imports"].strip().splitlines()
        assert len(ignored) == 3 and not any("compat" in line for line in ignored), (name, ignored)


def test_every_package_but_the_command_line_is_forbidden_the_compatibility_surface():
    # NOTE: a new top-level module or package must join the contract's list (or be the command line)
    config = configparser.ConfigParser()
    config.read(os.path.join(ROOT, ".importlinter"))
    contract = config["importlinter:contract:no-compat-in-the-core"]
    assert contract["forbidden_modules"].split() == ["cupynet.compat"]
    sources = set(contract["source_modules"].split())
    top_level = {f"cupynet.{m.name}" for m in pkgutil.iter_modules([os.path.join(ROOT, "cupynet")])}
    assert sources == top_level - {"cupynet.cli", "cupynet.run", "cupynet.compat"}


def test_the_forbidden_contract_catches_an_import(tmp_path):
    # NOTE: the negative control: cupynet.compat.netcl imports cupynet.amp, so forbidding it must break
    config = tmp_path / "forbidden.ini"
    config.write_text(textwrap.dedent("""
        [importlinter]
        root_package = cupynet

        [importlinter:contract:forbidden]
        name = forbidden on purpose
        type = forbidden
        source_modules =
            cupynet.compat
        forbidden_modules =
            cupynet.amp
    """))
    out = lint(config)
    assert out.returncode != 0 and "BROKEN" in out.stdout, out.stdout[-2000:]
    assert "cupynet.compat.netcl -> cupynet.amp" in out.stdout, out.stdout[-2000:]


def test_the_contract_catches_an_upward_import(tmp_path):
    # NOTE: the negative control: claim nn sits below ops (it imports ops everywhere), which must break
    config = tmp_path / "inverted.ini"
    config.write_text(textwrap.dedent("""
        [importlinter]
        root_package = cupynet

        [importlinter:contract:inverted]
        name = inverted on purpose
        type = layers
        layers =
            cupynet.ops
            cupynet.nn
    """))
    out = lint(config)
    assert out.returncode != 0 and "cupynet.ops is not allowed to import cupynet.nn" not in out.stdout
    assert "cupynet.nn is not allowed to import cupynet.ops" in out.stdout, out.stdout[-2000:]


def _op_name(cls_node):
    for stmt in cls_node.body:
        if isinstance(stmt, ast.Assign):
            targets = stmt.targets[0].elts if isinstance(stmt.targets[0], ast.Tuple) else [stmt.targets[0]]
            values = stmt.value.elts if isinstance(stmt.value, ast.Tuple) else [stmt.value]
            for target, value in zip(targets, values):
                if getattr(target, "id", None) == "op_name" and isinstance(value, ast.Constant):
                    return value.value
    return None


def test_each_op_function_sits_right_below_its_class():
    # NOTE: docs/autograd.md promises it: `class Exp` and `def exp` are read together. Between them may sit
    # only subclasses that are the same op (cross_entropy's three classes share one function).
    far = []
    for path in sorted(pathlib.Path(ROOT, "cupynet", "ops").rglob("*.py")):
        body = ast.parse(path.read_text(encoding="utf-8")).body
        functions = {node.name: i for i, node in enumerate(body) if isinstance(node, ast.FunctionDef)}
        for i, node in enumerate(body):
            name = _op_name(node) if isinstance(node, ast.ClassDef) else None
            if name not in functions:
                continue
            between = body[i + 1:functions[name]]
            same_op = all(isinstance(n, ast.ClassDef) and _op_name(n) is None
                          and any(getattr(b, "id", None) == node.name for b in n.bases) for n in between)
            if functions[name] < i or not same_op:
                far.append(f"{path.relative_to(ROOT)}: class {node.name} (line {node.lineno}), def {name} "
                           f"(line {body[functions[name]].lineno})")
    assert not far, "put each op's function right below its class:\n" + "\n".join(far)
