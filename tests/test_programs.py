"""Loss parity with PyTorch: small training programs in plain PyTorch (tests/programs/) run once with real torch
(``python prog.py``) and once on cupynet (``cupynet run prog.py``), from the same weights, and their per-step
losses must agree within what floating-point rounding explains (issue 13's acceptance).

Each program builds its model, overwrites every parameter from a NumPy RNG (``numpy_weights.init_from_numpy``,
through ``p.data.copy_(torch.from_numpy(...))``), draws its data from NumPy too and uses no other randomness
(dropout 0, no shuffling), so the two runs compute the same real-number function; only rounding separates them.

The tolerance, derived (not fitted):

* fp32. One rounded operation is exact up to a factor (1 + d), |d| <= u = 2**-24. A value computed through a chain
  of D rounded additions/multiplications (a dot product of length n is n of them) is off by at most gamma_D =
  D u / (1 - D u) relative (Higham, *Accuracy and Stability of Numerical Algorithms*, 3.1) and, since rounding
  errors behave as independent zero-mean variables, by at most lambda sqrt(D) u with probability at least
  1 - 2 exp(-lambda**2 / 2) (Higham and Mary, *A new approach to probabilistic rounding error analysis*, 2019);
  lambda = 4 gives 0.9993. Torch and cupynet order their sums differently (BLAS blocking, reduction trees), so each
  is within that of the exact loss and they are within twice that of each other. D is the longest chain one step's
  loss depends on: forward (the sum of the reduction lengths of the layers in series, fan-ins, normalisation
  statistics and the loss's own mean) and the backward pass over the same chain again, so D = 2 x (forward chain);
  each program's count is given in ``PROGRAMS``. Over training the differences of step j enter the weights of every
  later step; for a training map that does not expand differences, k steps of independent contributions add up
  like a random walk: a factor sqrt(k + 1). So at step k: |torch - cupynet| <= 2 lambda sqrt(D) u sqrt(k + 1) |loss|.
* bfloat16 autocast. Matmuls and convolutions round their outputs to bfloat16 (u_b = 2**-9). Both libraries round
  (nearly) the same fp32 values to nearest-even, so they differ only where an fp32 value lies within the fp32 bound
  of a rounding boundary, and there by one bfloat16 ulp (2 u_b relative). Such flips move the loss by at most
  2 u_b times its scale per step, combined with the same lambda and the random walk over steps:
  |torch - cupynet| <= 2 lambda u_b sqrt(k + 1) |loss_0|. The scale is the first loss, not the current one: as the
  loss goes to 0 the logits grow and one ulp of a logit stays one ulp of the logits, not of the (small) loss.

Skipped (cleanly) where torch is not installed.
"""

import importlib.util
import json
import math
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAMS_DIR = os.path.join(ROOT, "tests", "programs")
U_FP32, U_BF16 = 2.0 ** -24, 2.0 ** -9
LAMBDA = 4.0

# program -> (unit roundoff, D: the longest chain of rounded operations one step's loss depends on). The forward
# chains, each counted as the sum of the reduction lengths in series, doubled for the backward pass:
PROGRAMS = {
    # Linear fan-ins 3 + 64 + 64, the MSE mean over 64
    "mlp_regression.py": (U_FP32, 2 * (3 + 64 + 64 + 64)),
    # in_proj 32, q.k over the head's 8, softmax . v over 16 positions, out_proj 32, LayerNorms 3 x 32,
    # feed-forward 32 + 64, head 32, the cross-entropy mean over 8 x 16 positions
    "char_transformer.py": (U_FP32, 2 * (32 + 8 + 16 + 32 + 3 * 32 + 32 + 64 + 32 + 128)),
    # two LSTM layers over 8 time steps in series: 8 x (16 + 24) + 8 x (24 + 24), decoder 24, NLL mean over 32
    "lstm_lm.py": (U_FP32, 2 * (8 * 40 + 8 * 48 + 24 + 32)),
    # conv 27, BatchNorm statistics over 8 x 8 x 8, conv 72, BatchNorm over 8 x 4 x 4, average pool 16, Linear 16,
    # the cross-entropy over 5 classes x 8
    "cnn_batchnorm.py": (U_FP32, 2 * (27 + 512 + 72 + 128 + 16 + 16 + 40)),
    # a bidirectional GRU over 7 time steps in series: 7 x (3 + 12), Linear 24, the cross-entropy over 2 x 8
    "gru_packed.py": (U_FP32, 2 * (7 * 15 + 24 + 16)),
    # bfloat16: the bound does not depend on D (see the module docstring)
    "amp_bf16.py": (U_BF16, None),
}


def torch_installed():
    return importlib.util.find_spec("torch") is not None


# NOTE: one process runs every program (torch's import alone takes seconds on a busy machine), as
# `python prog.py` / `cupynet run prog.py` would: runpy as __main__ with the program's directory on sys.path,
# or cupynet.run.run_script; the helper module is re-imported for each program.
DRIVER = """
import contextlib, io, json, runpy, sys
reports = {}
for name in sys.argv[2:]:
    sys.modules.pop("numpy_weights", None)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        if sys.argv[1] == "cupynet":
            from cupynet.run import run_script
            status = run_script(name)
        else:
            sys.argv[0] = name
            runpy.run_path(name, run_name="__main__")
            status = 0
    reports[name] = json.loads(out.getvalue().strip().splitlines()[-1]) if status == 0 else None
print(json.dumps(reports))
"""


@pytest.fixture(scope="module")
def reports():
    """{"torch": {program: report}, "cupynet": {...}}: both runs of every program, the two drivers side by side."""
    env = dict(os.environ, PYTHONPATH=ROOT, CUPYNET_DEVICE="cpu")
    runs = {side: subprocess.Popen([sys.executable, "-c", DRIVER, side, *sorted(PROGRAMS)], cwd=PROGRAMS_DIR, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for side in ("torch", "cupynet")}
    done = {side: run.communicate(timeout=600) for side, run in runs.items()}
    for side, run in runs.items():
        assert run.returncode == 0, f"the {side} runs failed:\n{done[side][1][-3000:]}"
    found = {side: json.loads(out.strip().splitlines()[-1]) for side, (out, _) in done.items()}
    found["stderr"] = {side: err for side, (_, err) in done.items()}
    return found


def tolerance(step, unit, chain, loss, first_loss):
    """The largest |torch - cupynet| rounding explains at ``step`` (module docstring)."""
    if chain is None:  # bfloat16 autocast
        return 2 * LAMBDA * unit * math.sqrt(step + 1) * abs(first_loss)
    return 2 * LAMBDA * math.sqrt(chain) * unit * math.sqrt(step + 1) * abs(loss)


@pytest.mark.skipif(not torch_installed(), reason="the parity programs need torch as the oracle")
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_losses_follow_torch_from_the_same_weights(reports, name):
    unit, chain = PROGRAMS[name]
    theirs, ours = reports["torch"][name], reports["cupynet"][name]
    assert ours is not None, f"cupynet run {name} failed:\n{reports['stderr']['cupynet'][-3000:]}"
    assert ours["params"] == theirs["params"]  # the same parameters, names and shapes, were initialised
    expected, got = theirs["losses"], ours["losses"]
    assert len(got) == len(expected) >= 10
    assert min(expected[1:]) < 0.9 * expected[0]  # the program trains: the comparison is not of constants
    for step, (a, b) in enumerate(zip(expected, got)):
        bound = tolerance(step, unit, chain, max(abs(a), abs(b)), expected[0])
        assert abs(a - b) <= bound, (f"{name} step {step}: torch {a!r}, cupynet {b!r}, |diff| {abs(a - b):.3g} "
                                     f"> {bound:.3g}\ntorch:   {expected}\ncupynet: {got}")


def test_the_programs_are_plain_pytorch():
    # NOTE: the programs must stay what a PyTorch user writes: no cupynet import, runnable by `python prog.py`
    for name in [*PROGRAMS, "numpy_weights.py"]:
        with open(os.path.join(PROGRAMS_DIR, name)) as f:
            source = f.read()
        assert "import cupynet" not in source and "from cupynet" not in source and "import torch" in source, name
        assert len(source.splitlines()) < 80, f"{name} should stay under 80 lines"
    assert sorted(n for n in os.listdir(PROGRAMS_DIR) if n.endswith(".py")) == sorted([*PROGRAMS, "numpy_weights.py"])
