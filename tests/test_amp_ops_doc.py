"""docs/amp_ops.md must match the op classes' policies; policies must match the reference lists or say why."""

import pathlib
import subprocess
import sys

import cupynet as cn
from cupynet.amp import policy

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "amp_ops.md"
REGENERATE = "PYTHONPATH=. python scripts/gen_amp_ops.py"


def test_committed_doc_matches_the_code():
    expected = policy.render_markdown(cn.ops.OP_CLASSES)
    current = DOC.read_text(encoding="utf-8") if DOC.exists() else "(missing)"
    assert current == expected, f"docs/amp_ops.md is out of date with the op policies; regenerate it: {REGENERATE}"


def test_generation_is_deterministic_and_order_independent():
    classes = list(cn.ops.OP_CLASSES)
    assert policy.render_markdown(classes) == policy.render_markdown(list(reversed(classes)))


def test_every_policy_deviation_is_documented():
    undocumented = [(name, mine, ref) for name, mine, ref in policy.deviations(cn.ops.OP_CLASSES)
                    if name not in policy.DOCUMENTED_DEVIATIONS]
    assert not undocumented, ("these ops' amp_policy differs from PyTorch's CUDA lists (name, cupynet, reference); "
                              "fix the policy or add a reason to DOCUMENTED_DEVIATIONS in "
                              f"cupynet/amp/policy.py: {undocumented}")


def test_documented_deviations_are_still_deviations():
    live = {name for name, _, _ in policy.deviations(cn.ops.OP_CLASSES)}
    stale = sorted(set(policy.DOCUMENTED_DEVIATIONS) - live)
    assert not stale, f"DOCUMENTED_DEVIATIONS lists ops that no longer deviate (or no longer exist): {stale}"


def test_doc_lists_each_policy_and_missing_ops():
    text = policy.render_markdown(cn.ops.OP_CLASSES)
    assert "| `matmul` | `cupynet.ops.linalg.Matmul` |" in text
    for heading in ("`lower`", "`fp32`", "`promote`", "`banned`", "unlisted", "does not implement"):
        assert heading in text
    have = {c.name() for c in cn.ops.OP_CLASSES}
    missing_line = next(line for line in text.splitlines() if line.startswith("- **lower**"))
    for name in policy.REFERENCE["lower"]:
        assert (f"`{name}`" in missing_line) == (name not in have)


def test_reference_policy_lookup():
    assert policy.reference_policy("matmul") == "lower"
    assert policy.reference_policy("log_softmax") == "fp32"
    assert policy.reference_policy("cat") == "promote"
    assert policy.reference_policy("binary_cross_entropy") == "banned"
    assert policy.reference_policy("relu") is None


def test_script_check_mode_reports_a_stale_doc(tmp_path, monkeypatch):
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import gen_amp_ops
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    monkeypatch.setattr(gen_amp_ops, "DOC", tmp_path / "amp_ops.md")
    (tmp_path / "amp_ops.md").write_text("stale\n", encoding="utf-8")
    assert gen_amp_ops.main(["--check"]) == 1
    assert gen_amp_ops.main([]) == 0
    assert gen_amp_ops.main(["--check"]) == 0


def test_script_runs_from_the_command_line(tmp_path):
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_amp_ops.py"), "--check"],
                            capture_output=True, text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT)}, timeout=120)
    assert result.returncode in (0, 1), result.stderr
    assert ("up to date" in result.stdout) or ("out of date" in result.stderr)
