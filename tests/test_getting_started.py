"""docs/getting_started.md stays true: its commands and scripts run, in order, in one fresh directory.

``cupynet ...`` lines run as ``python -m cupynet.cli ...``; ``python`` blocks run as scripts; the install
lines cannot run here (no network), so their extras are checked against pyproject.toml instead.
"""

import os
import re
import shlex
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(ROOT, "docs", "getting_started.md")
pytest.importorskip("sklearn")  # the digits data set


def blocks():
    """(language, code) of every fenced block of the page, in order."""
    text = open(PAGE, encoding="utf-8").read()
    return re.findall(r"^```(\w+)\n(.*?)^```", text, flags=re.S | re.M)


def run(argv, cwd):
    env = {**os.environ, "PYTHONPATH": ROOT, "CUPYNET_DEVICE": "cpu"}
    result = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=300)
    assert result.returncode == 0, f"{argv}\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
    return result.stdout


def check_install_line(line):
    extras = set(re.findall(r'"\.\[([\w,]+)\]"', line)[0].split(","))
    pyproject = open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8").read()
    declared = set(re.findall(r"^(\w+) = \[", pyproject.split("[project.optional-dependencies]")[1], flags=re.M))
    assert extras <= declared, f"{line}: extras {extras - declared} are not in pyproject.toml"


def test_every_block_of_the_page_runs(tmp_path):
    ran = {"cupynet": 0, "python": 0}
    outputs = []
    for language, code in blocks():
        if language == "python":
            outputs.append(run([sys.executable, "-c", code], tmp_path))
            ran["python"] += 1
            continue
        if language != "bash":
            continue  # ```text: sample output
        for line in code.strip().splitlines():
            if line.startswith("cupynet "):
                outputs.append(run([sys.executable, "-m", "cupynet.cli", *shlex.split(line)[1:]], tmp_path))
                ran["cupynet"] += 1
            elif "pip install" in line:
                check_install_line(line)
                ci = open(os.path.join(ROOT, ".ci", "run")).read()
                assert "[docs]" not in line or ("pdoc cupynet -o build/api" in line and ".[docs]" in ci
                                                and "pdoc cupynet -o build/api" in ci), "CI builds other API docs"
            else:
                pytest.fail(f"a command the test does not know how to check: {line}")
    # first run, metrics reading, the longer run with the new flags, first script, first AMP script
    assert ran == {"cupynet": 2, "python": 3}, ran
    first_run, metrics, longer_run, script, amp_script = outputs
    assert "(cosine to 0 over 330 updates, linear warmup over 20 updates)" in longer_run
    assert "test set:  best.ckpt's weights (epoch " in longer_run and longer_run.splitlines()[-1].startswith("test ac")
    assert any(name.startswith("events.out.tfevents.") for name in os.listdir(tmp_path / "runs" / "second" / "tb"))
    assert first_run.splitlines()[0].startswith("cupynet train: mlp (MLP, ")
    assert first_run.splitlines()[-1].startswith("test accuracy: ")
    for name in ("last.ckpt", "best.ckpt", "curves.png", "metrics.jsonl"):
        assert (tmp_path / "runs" / "first" / name).is_file(), name
    assert re.fullmatch(r"\d+ steps, best val accuracy \d+\.\d%\n", metrics), metrics
    accuracy = float(script.splitlines()[-1].split(": ")[1].rstrip("%"))
    assert accuracy > 90.0, script  # five epochs of the digits MLP
    assert (tmp_path / "mlp.ckpt").is_file()
    assert amp_script.count("scale ") == 5, amp_script
