"""docs/pytorch_compat.md must match what cupynet has now (regenerated from the installed torch)."""

import importlib.util
import os
import pathlib
import re
import subprocess
import sys

import pytest

pytest.importorskip("torch")

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "pytorch_compat.md"
REGENERATE = "PYTHONPATH=. python scripts/gen_pytorch_compat.py"


def generator():
    spec = importlib.util.spec_from_file_location("gen_pytorch_compat", ROOT / "scripts" / "gen_pytorch_compat.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_doc_matches_cupynet_and_the_installed_torch():
    import torch
    current = DOC.read_text(encoding="utf-8")
    made_with = re.search(r"^## Generated: .*\(torch ([^)]+)\)$", current, re.M)
    if made_with is None or made_with.group(1) != torch.__version__:
        pytest.skip(f"docs/pytorch_compat.md was generated from another torch ({made_with and made_with.group(1)})")
    # NOTE: in a fresh process: the tables list module attributes, and other tests import submodules (of torch
    # and cupynet) that then show up as attributes of their parents
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "scripts/gen_pytorch_compat.py", "--check"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"docs/pytorch_compat.md is out of date; run {REGENERATE}\n{done.stdout}{done.stderr}"


def test_the_hand_written_section_is_kept_and_every_mapped_module_has_a_row():
    gen = generator()
    text = gen.generate(f"{gen.BEGIN}\nmy notes\n{gen.END}\nstale tables")
    assert text.startswith(f"{gen.BEGIN}\nmy notes\n{gen.END}\n\n") and "stale tables" not in text
    from cupynet.run import TORCH_MODULES
    for name in TORCH_MODULES:
        assert f"| `{name}` | `{TORCH_MODULES[name]}`" in text


def test_where_names_the_defining_function_or_a_dash():
    gen = generator()
    import cupynet
    assert gen.where(cupynet, "relu").startswith("`cupynet.") and gen.where(cupynet, "not_a_name") == gen.MISSING
    assert gen.where(None, "relu") == gen.MISSING and gen.where(cupynet, "nn") == "`cupynet.nn`"
