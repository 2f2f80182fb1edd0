"""lerp / addcmul / addcdiv against PyTorch (issue 13)."""

import numpy as np
import pytest

import cupynet as cn
from tests.op_harness import check_op, requires_torch

torch = pytest.importorskip("torch")

pytestmark = requires_torch


def test_lerp_scalar_and_tensor_weight_broadcast():
    check_op([(3, 4), (3, 4)], lambda a, b: cn.lerp(a, b, 0.3), torch_fn=lambda a, b: torch.lerp(a, b, 0.3))
    check_op([(3, 4), (3, 4)], lambda a, b: a.lerp(b, 0.8), torch_fn=lambda a, b: a.lerp(b, 0.8))
    check_op([(3, 4), (1, 4), (3, 1)], cn.lerp, torch_fn=torch.lerp, low=-0.5, high=1.5)


def test_lerp_endpoints_exact():
    a, b = cn.tensor([1e8, -3.0]), cn.tensor([1.0, 7.0])
    np.testing.assert_array_equal(cn.lerp(a, b, 1.0).numpy(), b.numpy())
    np.testing.assert_array_equal(cn.lerp(a, b, 0.0).numpy(), a.numpy())


@pytest.mark.parametrize("name", ["addcmul", "addcdiv"])
def test_addcmul_addcdiv(name):
    check_op([(3, 4), (3, 1), (1, 4)], lambda a, b, c: getattr(cn, name)(a, b, c, value=0.5),
             torch_fn=lambda a, b, c: getattr(torch, name)(a, b, c, value=0.5), low=0.5, high=2.0)
    check_op([(3, 4), (3, 4), (3, 4)], lambda a, b, c: getattr(a, name)(b, c),
             torch_fn=lambda a, b, c: getattr(a, name)(b, c), low=0.5, high=2.0)


def test_half_computes_in_fp32_and_rounds_once():
    rng = np.random.default_rng(0)
    a, b, c = (rng.uniform(0.5, 2, size=64).astype(np.float16) for _ in range(3))
    got = cn.addcdiv(cn.tensor(a), cn.tensor(b), cn.tensor(c), value=0.1).numpy()
    want = torch.addcdiv(torch.tensor(a).float(), torch.tensor(b).float(), torch.tensor(c).float(), value=0.1).half()
    np.testing.assert_array_equal(got, want.numpy())


def test_bad_inputs():
    with pytest.raises(RuntimeError, match="expected dtype float32 for `end` but got dtype float64"):
        cn.lerp(cn.ones(3), cn.ones(3, dtype=cn.float64), 0.5)
    with pytest.raises(RuntimeError, match="Integer division with addcdiv is no longer supported"):
        cn.addcdiv(cn.ones(3, dtype=cn.int64), cn.ones(3, dtype=cn.int64), cn.ones(3, dtype=cn.int64))
    with pytest.raises(TypeError, match="expected tensor1 to be a Tensor"):
        cn.addcmul(cn.ones(3), 2.0, cn.ones(3))
