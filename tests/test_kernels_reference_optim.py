"""NumPy references of the fused SGD / Adam / AdamW kernels (``cupynet.optim.kernels``) against torch.optim."""

import ml_dtypes
import numpy as np
import pytest

from cupynet.amp import kernels as K
from cupynet.cuda.multi_tensor import CHUNK_SIZE
from cupynet.optim import kernels as O

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32 = np.dtype(np.float16), np.dtype(np.float32)


def bits(a):
    a = np.asarray(a)
    return a.view({2: np.uint16, 4: np.uint32}[a.dtype.itemsize]).copy()


def random_array(rng, size, dtype, scale=4.0):
    return (rng.standard_normal(size) * scale).astype(np.float32).astype(dtype)


# ---------------------------------------------------------------- fused SGD / Adam vs torch.optim

SHAPES = ((3, 5), (CHUNK_SIZE + 3,), (1,))


def make_problem(rng, grad_dtype, n_steps=5):
    params = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    grads = [[random_array(rng, s, grad_dtype, 1.0) for s in SHAPES] for _ in range(n_steps)]
    return params, grads


def run_torch(torch, optimizer_class, params, grads, **hyper):
    tensors = [torch.tensor(p.copy(), requires_grad=True) for p in params]
    opt = optimizer_class(tensors, foreach=False, **hyper)
    for step_grads in grads:
        for t, g in zip(tensors, step_grads):
            t.grad = torch.from_numpy(g.astype(np.float32))
        opt.step()
    return [t.detach().numpy() for t in tensors], opt


def assert_close(ours, theirs):
    # NOTE: torch's CPU kernels fuse `a + alpha * b` into one FMA (one rounding, we round twice), so
    # results of O(1) operands differ by a few ulps of 1.0; where they cancel to a small value that is
    # a large *relative* error, hence the absolute floor. (An fp64 FMA emulation reproduces torch exactly.)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


SGD_CASES = [dict(momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0, maximize=False),
             dict(momentum=0.9, dampening=0.0, nesterov=True, weight_decay=1e-2, maximize=False),
             dict(momentum=0.8, dampening=0.3, nesterov=False, weight_decay=0.0, maximize=True)]


@pytest.mark.parametrize("grad_dtype", [F32, F16, BF16])
@pytest.mark.parametrize("case", range(len(SGD_CASES)))
def test_fused_sgd_matches_torch(grad_dtype, case):
    torch = pytest.importorskip("torch")
    hyper = SGD_CASES[case]
    params, grads = make_problem(np.random.default_rng(6), grad_dtype)
    expected, opt = run_torch(torch, torch.optim.SGD, params, grads, lr=0.05, **hyper)
    bufs = [np.zeros_like(p) for p in params]
    for i, step_grads in enumerate(grads):
        O.fused_sgd_(params, step_grads, bufs, lr=0.05, first_step=(i == 0), **hyper)
    assert_close(params, expected)
    if hyper["momentum"]:
        assert_close(bufs, [opt.state[t]["momentum_buffer"].numpy() for t in opt.param_groups[0]["params"]])


ADAM_CASES = [dict(weight_decay=0.0, amsgrad=False, maximize=False, betas=(0.9, 0.999)),
              dict(weight_decay=0.1, amsgrad=True, maximize=False, betas=(0.9, 0.99)),
              dict(weight_decay=0.05, amsgrad=False, maximize=True, betas=(0.3, 0.9))]  # beta1 < .5: lerp branch 2


@pytest.mark.parametrize("decoupled", [False, True])
@pytest.mark.parametrize("grad_dtype", [F32, BF16])
@pytest.mark.parametrize("case", range(len(ADAM_CASES)))
def test_fused_adam_and_adamw_match_torch(decoupled, grad_dtype, case):
    torch = pytest.importorskip("torch")
    hyper = dict(ADAM_CASES[case])
    beta1, beta2 = hyper.pop("betas")
    params, grads = make_problem(np.random.default_rng(7), grad_dtype)
    cls = torch.optim.AdamW if decoupled else torch.optim.Adam
    expected, opt = run_torch(torch, cls, params, grads, lr=1e-2, betas=(beta1, beta2), eps=1e-8, **hyper)
    m, v, vmax = ([np.zeros_like(p) for p in params] for _ in range(3))
    step = np.zeros(1, np.float32)
    for step_grads in grads:
        O.fused_adam_(params, step_grads, m, v, vmax if hyper["amsgrad"] else None, step, lr=1e-2, beta1=beta1,
                      beta2=beta2, eps=1e-8, decoupled=decoupled, **hyper)
    assert step[0] == len(grads)
    assert_close(params, expected)
    states = [opt.state[t] for t in opt.param_groups[0]["params"]]
    assert_close(m, [s["exp_avg"].numpy() for s in states])
    assert_close(v, [s["exp_avg_sq"].numpy() for s in states])


def adam_args(rng, grad_dtype=F16):
    params, grads = make_problem(rng, grad_dtype, n_steps=1)
    state = [[np.zeros_like(p) for p in params] for _ in range(3)]
    return params, grads[0], *state, np.array([3.0], np.float32)


ADAM_HYPER = dict(lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, decoupled=False, amsgrad=True,
                  maximize=False)


def test_found_inf_skips_every_write_and_the_step_count():
    rng = np.random.default_rng(8)
    args = adam_args(rng)
    before = [a.copy() for group in args[:5] for a in group] + [args[5].copy()]
    O.fused_adam_(*args, found_inf=np.array([1.0], np.float32), **ADAM_HYPER)
    after = [a for group in args[:5] for a in group] + [args[5]]
    assert all(np.array_equal(bits(a), bits(b)) for a, b in zip(before, after))
    params, grads = make_problem(rng, BF16, n_steps=1)
    bufs, flag, p0 = [np.ones_like(p) for p in params], np.array([1], np.int32), [p.copy() for p in params]
    O.fused_sgd_(params, grads[0], bufs, lr=0.1, momentum=0.9, dampening=0.0, nesterov=False, weight_decay=0.0,
                 maximize=False, first_step=flag, found_inf=np.array([1.0], np.float32))
    assert all(np.array_equal(a, b) for a, b in zip(params, p0)) and flag[0] == 1 and bufs[0][0, 0] == 1


def test_inv_scale_equals_unscaling_first_bit_for_bit():
    # NOTE: fp32 grads: a power-of-two inv_scale is exact there (fp16 grads would round when unscaled first)
    scaled, plain = adam_args(np.random.default_rng(9), F32), adam_args(np.random.default_rng(9), F32)
    inv = np.array([2.0**-10], np.float32)
    K.non_finite_check_and_unscale_(plain[1], np.zeros(1, np.float32), inv)
    O.fused_adam_(*scaled, inv_scale=inv, **ADAM_HYPER)
    O.fused_adam_(*plain, **ADAM_HYPER)
    assert all(np.array_equal(bits(a), bits(b)) for a, b in zip(scaled[0], plain[0]))


def test_mixed_grad_dtypes_in_one_call_equal_one_call_per_dtype():
    rng = np.random.default_rng(12)
    params = [rng.standard_normal(n).astype(np.float32) for n in (5, CHUNK_SIZE + 1, 9)]
    grads = [random_array(rng, 5, F16), random_array(rng, CHUNK_SIZE + 1, BF16), random_array(rng, 9, F16)]
    together, apart = [p.copy() for p in params], [p.copy() for p in params]
    hyper = dict(lr=0.1, momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.01, maximize=False,
                 first_step=True, inv_scale=np.array([0.5], np.float32))
    O.fused_sgd_(together, grads, None, **hyper)
    for i in range(3):
        O.fused_sgd_([apart[i]], [grads[i]], None, **hyper)
    assert all(np.array_equal(bits(a), bits(b)) for a, b in zip(together, apart))
    assert not any(np.array_equal(a, p) for a, p in zip(together, params))


def test_device_first_step_flag_initialises_buffers_then_clears():
    params, grads = make_problem(np.random.default_rng(10), F32, n_steps=1)
    bufs, flag = [np.full_like(p, 99.0) for p in params], np.array([1], np.int32)
    O.fused_sgd_(params, grads[0], bufs, lr=0.1, momentum=0.9, dampening=0.5, nesterov=False, weight_decay=0.0,
                 maximize=False, first_step=flag)
    assert flag[0] == 0 and all(np.array_equal(b, g) for b, g in zip(bufs, grads[0]))


@pytest.mark.parametrize("change, error, message", [
    ({"params": [np.zeros(3, np.float16)]}, TypeError, r"params\[0\] has dtype float16"),
    ({"grads": [np.zeros(4, np.float32)]}, ValueError, r"grads\[0\] has shape \(4,\) but params\[0\] has shape"),
    ({"momentum_bufs": None}, ValueError, "momentum_bufs is None but momentum=0.9"),
    ({"nesterov": True, "dampening": 0.1}, ValueError, "Nesterov momentum requires a momentum and zero dampening"),
    ({"lr": -1.0}, ValueError, "invalid lr -1.0"),
    ({"maximize": 1}, TypeError, "maximize must be a bool"),
    ({"first_step": np.array([1.0], np.float32)}, ValueError, "first_step must be an int32 array"),
])
def test_fused_sgd_bad_arguments_change_nothing(change, error, message):
    args = dict(params=[np.ones(3, np.float32)], grads=[np.ones(3, np.float32)], momentum_bufs=[np.ones(3, np.float32)],
                lr=0.1, momentum=0.9, dampening=0.0, nesterov=False, weight_decay=0.0, maximize=False,
                first_step=False)
    args.update(change)
    before = [a.copy() for a in (*args["params"], *(args["momentum_bufs"] or ()))]
    with pytest.raises(error, match=f"fused_sgd_: {message}"):
        O.fused_sgd_(**args)
    assert all(np.array_equal(a, b) for a, b in zip((*args["params"], *(args["momentum_bufs"] or ())), before))


@pytest.mark.parametrize("change, message", [
    ({"beta1": 1.0}, r"invalid beta1 1.0; expected a finite number in \[0.0, 1.0\)"),
    ({"amsgrad": True, "max_exp_avg_sqs": None}, "max_exp_avg_sqs is None but amsgrad=True"),
    ({"step": np.zeros(1, np.int32)}, "step must be a float32 array"),
    ({"eps": float("nan")}, "invalid eps nan"),
])
def test_fused_adam_bad_arguments_change_nothing(change, message):
    params, grads, m, v, vmax, step = adam_args(np.random.default_rng(11))
    args = dict(ADAM_HYPER, params=params, grads=grads, exp_avgs=m, exp_avg_sqs=v, max_exp_avg_sqs=vmax, step=step)
    args.update(change)
    before = [p.copy() for p in params]
    with pytest.raises(ValueError, match=f"fused_adam_: {message}"):
        O.fused_adam_(**args)
    assert all(np.array_equal(a, b) for a, b in zip(params, before)) and step[0] == 3.0
