"""Issue 4 acceptance: the MLP and the CNN train under autocast on the CPU (fp16 and bf16) to within
1 percentage point of their fp32 accuracy on the digits test set."""

import time

import pytest

import cupynet as cn
from cupynet import nn, optim
from cupynet.amp import autocast
from cupynet.data import DataLoader
from cupynet.data.datasets import digits
from cupynet.models import build_model

pytest.importorskip("sklearn")

EPOCHS = {"mlp": 12, "cnn": 6}


def train_and_evaluate(model_name, amp_dtype):
    cn.manual_seed(0)
    device = cn.device("cpu")
    train = DataLoader(digits("train"), batch_size=64, shuffle=True, seed=0, device=device)
    test = DataLoader(digits("test"), batch_size=512, device=device)
    model = build_model(model_name, (1, 8, 8), 10)
    opt = optim.Adam(model.parameters(), lr=2e-3)
    enabled = amp_dtype is not None
    for _ in range(EPOCHS[model_name]):
        for x, y in train:
            opt.zero_grad()
            with autocast("cpu", dtype=amp_dtype or "bfloat16", enabled=enabled):
                logits = model(x)
                loss = nn.functional.cross_entropy(logits, y)
            if enabled:
                assert logits.dtype == cn.dtypes.as_dtype(amp_dtype) and loss.dtype == cn.float32
            loss.backward()
            assert all(p.grad.dtype == cn.float32 for p in model.parameters())
            opt.step()
    model.eval()
    correct = total = 0
    with cn.no_grad(), autocast("cpu", dtype=amp_dtype or "bfloat16", enabled=enabled):
        for x, y in test:
            correct += int((model(x).argmax(dim=1) == y).sum().item())
            total += y.shape[0]
    return 100.0 * correct / total


@pytest.mark.parametrize("model_name", ["mlp", "cnn"])
def test_autocast_accuracy_within_one_point_of_fp32(model_name):
    started = time.perf_counter()
    fp32 = train_and_evaluate(model_name, None)
    for dtype in ("float16", "bfloat16"):
        low = train_and_evaluate(model_name, dtype)
        assert abs(low - fp32) <= 1.0, f"{model_name} {dtype}: {low:.1f}% vs fp32 {fp32:.1f}%"
    assert fp32 >= 90.0, f"{model_name} fp32 reached only {fp32:.1f}%"
    print(f"{model_name}: fp32 {fp32:.1f}% ({time.perf_counter() - started:.1f}s for three runs)")
