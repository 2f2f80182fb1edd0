"""The architecture contract: the layers of shared/DESIGN.md, checked by import-linter on every test run.

``.importlinter`` (repository root) lists the layers, top to bottom, and the few
imports that go up at run time on purpose. A change that makes a lower layer
import a higher one, or two packages import each other, or any package but the
command line import the compatibility surface (``cupynet.compat``), fails here.
"""

import configparser
import os
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
        assert len(ignored) == 4 and not any("compat" in line for line in ignored), (name, ignored)


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
