"""The architecture contract: the layers of shared/DESIGN.md, checked by import-linter on every test run.

``.importlinter`` (repository root) lists the layers, top to bottom, and the few
imports that go up at run time on purpose. A change that makes a lower layer
import a higher one, or two packages import each other, fails here.
"""

import os
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
    assert "2 kept, 0 broken" in out.stdout, out.stdout[-2000:]


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
