"""benchmarks/bench_convnet.py runs end to end with a few pairs, and its torch twins compute what cupynet does."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_bench_convnet_prints_paired_ratios():
    pytest.importorskip("torch")
    env = dict(os.environ, PYTHONPATH=str(ROOT), CUPYNET_DEVICE="cpu")
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_convnet.py"), "--pairs", "3",
                             "--warmup", "1"], capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert [r["precision"] for r in rows] == ["fp32", "fp32"] and len({r["case"] for r in rows}) == 2
    for r in rows:
        assert r["cupynet_s"] > 0 and r["torch_s"] > 0 and r["ratio_q1"] <= r["ratio"] <= r["ratio_q3"]


def test_bn_net_twin_matches_the_cupynet_model():
    torch = pytest.importorskip("torch")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_convnet

    import cupynet as cn

    build, torch_build, shape, batch = bench_convnet.CASES["3-conv BatchNorm net 3x32x32, batch 32"]
    ours_step, model = bench_convnet.cupynet_step(build, shape, batch, False)
    bench_convnet.torch_step(model, torch_build, shape, batch, False, torch)()  # builds and steps
    x = np.random.default_rng(0).standard_normal((2, *shape)).astype(np.float32)
    twin = torch_build(torch)
    twin.load_state_dict({k: torch.tensor(cn.backend.to_numpy(v.array)) for k, v in model.state_dict().items()})
    np.testing.assert_allclose(model(cn.tensor(x)).detach().numpy(), twin(torch.tensor(x)).detach().numpy(),
                               rtol=1e-4, atol=1e-4)
    ours_step()
