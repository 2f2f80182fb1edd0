"""Loss ops against PyTorch (forward, gradients) and gradcheck/gradgradcheck; bad inputs; AMP policies."""

import numpy as np
import pytest
from op_harness import check_op, host

import cupynet as cn
import cupynet.ops.loss as loss_ops
import cupynet.ops.loss as loss_pointwise
from cupynet import amp

RNG = np.random.default_rng(0)
TARGET = np.array([0, 4, -100, 2])
CLASS_W = RNG.uniform(0.5, 2.0, 5)


def _weight(module, w):
    return None if w is None else module.tensor(w)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing,weighted", [(0.0, False), (0.2, True)])
def test_cross_entropy_class_indices(reduction, smoothing, weighted):
    torch = pytest.importorskip("torch")
    w = CLASS_W if weighted else None
    check_op([(4, 5)],
             lambda x: cn.cross_entropy(x, cn.tensor(TARGET), weight=_weight(cn, w), reduction=reduction,
                                        label_smoothing=smoothing),
             torch_fn=lambda x: torch.nn.functional.cross_entropy(x, torch.tensor(TARGET), weight=_weight(torch, w),
                                                                  reduction=reduction, label_smoothing=smoothing))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_without_ignored_targets(reduction):
    # NOTE: on the CPU this takes the path that skips the ignore mask; gradgradcheck covers its one-hot target
    torch = pytest.importorskip("torch")
    target = np.array([0, 4, 1, 2])
    check_op([(4, 5)], lambda x: cn.cross_entropy(x, cn.tensor(target), reduction=reduction),
             torch_fn=lambda x: torch.nn.functional.cross_entropy(x, torch.tensor(target), reduction=reduction))


@pytest.mark.parametrize("classes", [3, 64, 65, 200])
def test_cross_entropy_both_softmax_layouts_match_torch(classes):
    # NOTE: up to 64 classes the CPU softmax runs class-major (loss._CLASS_MAJOR_MAX), above it row-major
    torch = pytest.importorskip("torch")
    target = np.arange(5) * 7 % classes
    check_op([(5, classes)], lambda x: cn.cross_entropy(x, cn.tensor(target)),
             torch_fn=lambda x: torch.nn.functional.cross_entropy(x, torch.tensor(target)))


def test_cross_entropy_shapes_and_probabilities():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    target = RNG.integers(0, 4, size=(2, 3))
    check_op([(2, 4, 3)], lambda x: cn.cross_entropy(x, cn.tensor(target)),
             torch_fn=lambda x: F.cross_entropy(x, torch.tensor(target)))
    check_op([(4,)], lambda x: cn.cross_entropy(x, cn.tensor(2)),
             torch_fn=lambda x: F.cross_entropy(x, torch.tensor(2)))
    check_op([(3, 4), (3, 4)], lambda x, t: cn.cross_entropy(x, t * t, label_smoothing=0.1),
             torch_fn=lambda x, t: F.cross_entropy(x, t * t, label_smoothing=0.1))


def test_cross_entropy_is_stable_for_huge_logits():
    x = cn.tensor([[1e4, 0.0, -1e4], [-3e4, 3e4, 0.0]], requires_grad=True)
    loss = cn.cross_entropy(x, cn.tensor([0, 0]))
    np.testing.assert_allclose(loss.item(), 3e4, rtol=1e-6)
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0, 0, 0], [-0.5, 0.5, 0]], atol=1e-6)


def test_cross_entropy_half_input_keeps_dtype_and_fp32_math():
    x = cn.tensor(RNG.standard_normal((8, 5)) * 4, dtype=cn.float16, requires_grad=True)
    loss = cn.cross_entropy(x, cn.tensor(RNG.integers(0, 5, 8)))
    assert loss.dtype == cn.float16
    loss.backward()
    assert x.grad.dtype == cn.float16
    # NOTE: each row of softmax - onehot sums to zero; fp32 math keeps that to half-precision rounding
    np.testing.assert_allclose(host(x.grad).sum(axis=1), 0.0, atol=2e-3)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss(reduction):
    torch = pytest.importorskip("torch")
    check_op([(4, 5)], lambda x: cn.nll_loss(x, cn.tensor(TARGET), weight=cn.tensor(CLASS_W), reduction=reduction),
             torch_fn=lambda x: torch.nn.functional.nll_loss(x, torch.tensor(TARGET), weight=torch.tensor(CLASS_W),
                                                             reduction=reduction))


@pytest.mark.parametrize("name,options", [("mse_loss", {}), ("l1_loss", {}), ("smooth_l1_loss", {"beta": 0.5}),
                                          ("smooth_l1_loss", {"beta": 0.0}), ("huber_loss", {"delta": 0.7})])
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_regression_losses(name, options, reduction):
    torch = pytest.importorskip("torch")
    fn, tfn = getattr(cn, name), getattr(torch.nn.functional, name)
    check_op([(3, 4), (3, 4)], lambda a, b: fn(a, b, reduction=reduction, **options),
             torch_fn=lambda a, b: tfn(a, b, reduction=reduction, **options))


def test_binary_cross_entropy_family():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    w, pw = RNG.uniform(0.5, 2, (2, 3)), RNG.uniform(0.5, 2, (3,))
    check_op([(2, 3), (2, 3)], lambda p, t: cn.binary_cross_entropy(p, t, weight=cn.tensor(w), reduction="sum"),
             torch_fn=lambda p, t: F.binary_cross_entropy(p, t, weight=torch.tensor(w), reduction="sum"),
             low=0.05, high=0.95)
    check_op([(2, 3), (2, 3)],
             lambda x, t: cn.binary_cross_entropy_with_logits(x, t, weight=cn.tensor(w), pos_weight=cn.tensor(pw)),
             torch_fn=lambda x, t: F.binary_cross_entropy_with_logits(x, t, weight=torch.tensor(w),
                                                                      pos_weight=torch.tensor(pw)), low=-3, high=3)


def test_bce_with_logits_is_stable_for_huge_logits():
    x = cn.tensor([100.0, -100.0, 0.0], requires_grad=True)
    loss = cn.binary_cross_entropy_with_logits(x, cn.tensor([0.0, 1.0, 1.0]), reduction="none")
    np.testing.assert_allclose(loss.detach().numpy(), [100.0, 100.0, np.log(2.0)], rtol=1e-6)
    loss.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, -1.0, -0.5], atol=1e-6)


@pytest.mark.parametrize("reduction", ["batchmean", "sum", "none"])
def test_kl_div(reduction):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    check_op([(3, 4), (3, 4)], lambda a, b: cn.kl_div(a, b, reduction=reduction),
             torch_fn=lambda a, b: F.kl_div(a, b, reduction=reduction), low=0.1, high=1.0)
    check_op([(3, 4), (3, 4)], lambda a, b: cn.kl_div(a, b, reduction=reduction, log_target=True),
             torch_fn=lambda a, b: F.kl_div(a, b, reduction=reduction, log_target=True))


def test_extra_losses_and_cosine_similarity():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    sign = np.sign(RNG.standard_normal((3, 4)))
    check_op([(3, 4), (3, 4)], lambda a, b: cn.poisson_nll_loss(a, b * 3, full=True),
             torch_fn=lambda a, b: F.poisson_nll_loss(a, b * 3, full=True), low=0.2, high=2.0)
    check_op([(3, 4), (3, 4)], lambda a, b: cn.poisson_nll_loss(a, b, log_input=False),
             torch_fn=lambda a, b: F.poisson_nll_loss(a, b, log_input=False), low=0.2, high=2.0)
    check_op([(3, 4)], lambda a: cn.hinge_embedding_loss(a, cn.tensor(sign), margin=1.0),
             torch_fn=lambda a: F.hinge_embedding_loss(a, torch.tensor(sign), margin=1.0))
    check_op([(6,), (6,), (6,)], lambda a, b, t: cn.margin_ranking_loss(a, b, t, margin=0.3),
             torch_fn=lambda a, b, t: F.margin_ranking_loss(a, b, t, margin=0.3))
    check_op([(3, 4)], lambda a: cn.soft_margin_loss(a, cn.tensor(sign)),
             torch_fn=lambda a: F.soft_margin_loss(a, torch.tensor(sign)))
    check_op([(3, 4), (4,)], lambda a, b: cn.cosine_similarity(a, b, dim=-1),
             torch_fn=lambda a, b: F.cosine_similarity(a, b, dim=-1))


def test_amp_policies_and_banned_bce():
    assert loss_ops.CrossEntropy.amp_policy == "fp32" and loss_ops.NLLLoss.amp_policy == "fp32"
    assert loss_ops.BinaryCrossEntropyWithLogits.amp_policy == "fp32" and loss_ops.KLDiv.amp_policy == "fp32"
    for cls in (loss_pointwise.MSELoss, loss_pointwise.L1Loss, loss_pointwise.SmoothL1Loss,
                loss_pointwise.HuberLoss, loss_pointwise.PoissonNLLLoss, loss_pointwise.HingeEmbeddingLoss,
                loss_pointwise.MarginRankingLoss, loss_pointwise.SoftMarginLoss, loss_pointwise.CosineSimilarity):
        assert cls.amp_policy == "fp32", cls
    assert loss_ops.BinaryCrossEntropy.amp_policy == "banned"
    p, t = cn.full((2, 3), 0.5), cn.ones(2, 3)
    with amp.autocast("cpu", dtype=cn.float16):
        with pytest.raises(RuntimeError, match=r"cupynet.nn.functional.binary_cross_entropy and cupynet.nn.BCELoss "
                                               r"are unsafe to autocast.*binary_cross_entropy_with_logits"):
            cn.binary_cross_entropy(p, t)
        logits = cn.randn(4, 5, dtype=cn.float16)
        assert cn.cross_entropy(logits, cn.tensor([0, 1, 2, 3])).dtype == cn.float32
        assert cn.mse_loss(logits, logits * 0.5).dtype == cn.float32
    assert cn.binary_cross_entropy(p, t).dtype == cn.float32


def test_class_target_errors():
    x = cn.randn(3, 4)
    with pytest.raises(IndexError, match=r"cross_entropy: Target 4 is out of bounds \(expected class indices in "
                                         r"\[0, 3\] for 4 classes"):
        cn.cross_entropy(x, cn.tensor([0, 4, 1]))
    with pytest.raises(IndexError, match="nll_loss: Target -1 is out of bounds"):
        cn.nll_loss(x, cn.tensor([0, -1, 1]))
    with pytest.raises(ValueError, match=r"cross_entropy: expected target of shape \(3,\) for input of shape "
                                         r"\(3, 4\), got target of shape \(2,\)"):
        cn.cross_entropy(x, cn.tensor([0, 1]))
    with pytest.raises(ValueError, match=r"cross_entropy: class-probability target shape \(3, 5\) does not match "
                                         r"input shape \(3, 4\)"):
        cn.cross_entropy(x, cn.rand(3, 5))
    with pytest.raises(TypeError, match="nll_loss: expected target of integer class indices, got dtype float32"):
        cn.nll_loss(x, cn.rand(3, 4))
    with pytest.raises(ValueError, match=r"cross_entropy: weight must have shape \(4,\) for 4 classes"):
        cn.cross_entropy(x, cn.tensor([0, 1, 2]), weight=cn.ones(3))
    with pytest.raises(ValueError, match="cross_entropy: reduction must be one of 'none', 'mean', 'sum', got 'avg'"):
        cn.cross_entropy(x, cn.tensor([0, 1, 2]), reduction="avg")
    with pytest.raises(ValueError, match=r"cross_entropy: label_smoothing must be a number in \[0.0, 1.0\]"):
        cn.cross_entropy(x, cn.tensor([0, 1, 2]), label_smoothing=1.5)
    # NOTE: ignore_index itself is allowed even though it is out of range
    assert np.isfinite(cn.cross_entropy(x, cn.tensor([0, -100, 2])).item())


def test_pointwise_target_errors():
    x = cn.randn(3, 4)
    with pytest.raises(ValueError, match=r"mse_loss: target shape \(4,\) does not match input shape \(3, 4\)"):
        cn.mse_loss(x, cn.randn(4))
    with pytest.raises(TypeError, match="l1_loss: expected a floating point target"):
        cn.l1_loss(x, cn.ones(3, 4, dtype=cn.int64))
    with pytest.raises(ValueError, match="binary_cross_entropy: all elements of input should be between 0 and 1"):
        cn.binary_cross_entropy(x * 5, cn.ones(3, 4))
    with pytest.raises(ValueError, match=r"binary_cross_entropy_with_logits: pos_weight of shape \(3,\) does not "
                                         r"broadcast to the input shape \(3, 4\)"):
        cn.binary_cross_entropy_with_logits(x, cn.ones(3, 4), pos_weight=cn.ones(3))
    with pytest.raises(ValueError, match="kl_div: reduction must be one of"):
        cn.kl_div(x, x, reduction="avg")
    with pytest.raises(ValueError, match="huber_loss: delta must be > 0"):
        cn.huber_loss(x, x, delta=0)
    with pytest.raises(ValueError, match="mse_loss: size_average and reduce are deprecated"):
        cn.mse_loss(x, x, size_average=True)
