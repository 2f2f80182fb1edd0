"""Loss ops against PyTorch (forward, gradients) and gradcheck/gradgradcheck; bad inputs; AMP policies."""

import numpy as np
import pytest
from op_harness import check_op, host

import cupynet as cn
from cupynet import amp
from cupynet.ops.loss import classification, distance, likelihood, margin, regression

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
    # NOTE: up to 64 classes the CPU softmax runs class-major (classification._CLASS_MAJOR_MAX), above it row-major
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
    for cls in (classification.CrossEntropy, classification.PlainCrossEntropy, classification.FusedCrossEntropy,
                classification.NLLLoss):
        assert cls.amp_policy == "fp32", cls
    assert likelihood.BinaryCrossEntropyWithLogits.amp_policy == "fp32" and likelihood.KLDiv.amp_policy == "fp32"
    for cls in (regression.MSELoss, regression.L1Loss, regression.SmoothL1Loss,
                regression.HuberLoss, likelihood.PoissonNLLLoss, margin.HingeEmbeddingLoss,
                margin.MarginRankingLoss, margin.SoftMarginLoss, distance.CosineSimilarity):
        assert cls.amp_policy == "fp32", cls
    assert likelihood.BinaryCrossEntropy.amp_policy == "banned"
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


class _DeviceArray(np.ndarray):
    """A NumPy array standing in for GPU memory: reading a value back to the host raises.

    Reductions return 0-d device arrays, as CuPy's do, so ``bool(x.any())`` is a host read too.
    """

    def __array_wrap__(self, array, context=None, return_scalar=False):
        return np.asarray(array).view(_DeviceArray)

    def _host_read(self, *args, **kwargs):
        raise AssertionError("a device value was read back to the host (a sync)")

    __bool__ = __int__ = __float__ = __index__ = item = tolist = _host_read


class _FakeCupy:
    """What ``xp_of`` takes for CuPy: its ndarray is ``_DeviceArray``, its functions NumPy's."""

    ndarray = _DeviceArray

    def __getattr__(self, name):
        return getattr(np, name)


def test_binary_cross_entropy_reads_nothing_back_on_the_gpu(monkeypatch):
    # NOTE: an input outside [0, 1] on the GPU is not checked (that needs a sync): the loss is NaN
    p = cn.Tensor(np.array([[0.2, 1.5], [0.7, -0.1]], np.float32).view(_DeviceArray))
    t = cn.Tensor(np.array([[0.0, 1.0], [1.0, 0.0]], np.float32).view(_DeviceArray))
    monkeypatch.setattr(cn.backend, "cupy_or_none", _FakeCupy)
    with np.errstate(invalid="ignore"):
        loss = cn.binary_cross_entropy(p, t, reduction="none")
    got = loss.array.view(np.ndarray)
    assert np.isnan(got[0, 1]) and np.isnan(got[1, 1])
    # NOTE: log1p(-p) against log(1 - p) in float32: a few ulps of 1.2e-7 apart
    np.testing.assert_allclose(got[:, 0], -np.log([0.8, 0.7], dtype=np.float32), rtol=1e-6)
    monkeypatch.undo()
    with pytest.raises(ValueError, match=r"^binary_cross_entropy: all elements of input should be between 0 and 1$"):
        cn.binary_cross_entropy(cn.tensor(np.array([[0.2, 1.5]], np.float32)), cn.ones(1, 2))


def test_pointwise_target_errors():
    x = cn.randn(3, 4)
    with pytest.warns(UserWarning, match=r"^Using a target size \(4,\) that is different to the input size "
                                         r"\(3, 4\)\. This will likely lead to incorrect results due to "
                                         r"broadcasting\. Please ensure they have the same size\.$"):
        assert cn.mse_loss(x, cn.randn(4)).shape == ()
    with pytest.raises(TypeError, match="l1_loss: expected a floating point input or target .*, the other "
                                        "floating or integer; got float32 and bool"):
        cn.l1_loss(x, cn.ones(3, 4, dtype=cn.bool))  # NOTE: an int target is promoted, as torch (test_ops_loss_extra)
    with pytest.raises(ValueError, match="binary_cross_entropy: all elements of input should be between 0 and 1"):
        cn.binary_cross_entropy(x * 5, cn.ones(3, 4))
    with pytest.raises(ValueError, match=r"binary_cross_entropy_with_logits: pos_weight of shape \(3,\) does not "
                                         r"broadcast to the input shape \(3, 4\)"):
        cn.binary_cross_entropy_with_logits(x, cn.ones(3, 4), pos_weight=cn.ones(3))
    with pytest.raises(ValueError, match="kl_div: reduction must be one of"):
        cn.kl_div(x, x, reduction="avg")
    with pytest.raises(ValueError, match="huber_loss: delta must be > 0"):
        cn.huber_loss(x, x, delta=0)
    with pytest.raises(TypeError, match="mse_loss: reduce must be a bool or None"):
        cn.mse_loss(x, x, reduce="mean")


# ---- a target of another shape, loss by loss as PyTorch (issue 16) -----------------------------------------------
_BROADCASTING = [("mse_loss", {}), ("l1_loss", {}), ("smooth_l1_loss", {"beta": 0.5}), ("huber_loss", {"delta": 0.7}),
                 ("kl_div", {}), ("kl_div", {"log_target": True}), ("poisson_nll_loss", {}),
                 ("poisson_nll_loss", {"log_input": False, "full": True})]
_WARNS = ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss")


@pytest.mark.filterwarnings("ignore:Using a target size:UserWarning")  # NOTE: asserted in the test below
@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides the total loss:UserWarning")
@pytest.mark.parametrize("shapes", [[(3, 4), (4,)], [(4,), (3, 4)], [(3, 1), (1, 4)], [(2, 3), ()], [(), (2, 3)]])
@pytest.mark.parametrize("name,options,reduction", [
    (name, options, reduction) for name, options in _BROADCASTING
    for reduction in ("mean", "sum", "none") + (("batchmean",) if name == "kl_div" else ())])
def test_pointwise_loss_broadcasts_a_target_of_another_shape(name, options, reduction, shapes):
    # NOTE: values and both gradients (summed back to each operand's own shape) against PyTorch, and gradcheck
    torch = pytest.importorskip("torch")
    fn, tfn = getattr(cn, name), getattr(torch.nn.functional, name)
    check_op(shapes, lambda a, b: fn(a, b, reduction=reduction, **options),
             torch_fn=lambda a, b: tfn(a, b, reduction=reduction, **options), low=0.1, high=1.5,
             dtypes=("float32",), gradgrad=False)


@pytest.mark.parametrize("name,options", _BROADCASTING)
def test_pointwise_loss_warns_as_torch_about_another_target_shape(name, options):
    torch = pytest.importorskip("torch")
    import warnings  # noqa: PLC0415

    for lib in (torch, cn):
        x, t = lib.full((3, 4), 0.5), lib.full((4,), 0.5)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            getattr(lib.nn.functional, name)(x, t, reduction="sum", **options)
        texts = [str(w.message) for w in caught]
        expected = "Using a target size {} that is different to the input size {}. This will likely lead to " \
                   "incorrect results due to broadcasting. Please ensure they have the same size."
        shapes = ("(torch.Size([4]))", "(torch.Size([3, 4]))") if lib is torch else ("(4,)", "(3, 4)")
        assert texts == ([expected.format(*shapes)] if name in _WARNS else []), texts
        if lib is cn and texts:
            assert caught[0].filename == __file__  # NOTE: the warning points at the caller's line, as torch's does


@pytest.mark.parametrize("name,options", _BROADCASTING)
def test_pointwise_loss_shapes_that_do_not_broadcast_raise_as_torch(name, options):
    torch = pytest.importorskip("torch")
    with pytest.warns(UserWarning) if name in _WARNS else _no_warning(), \
            pytest.raises(RuntimeError, match="must match the size of tensor"):
        getattr(torch.nn.functional, name)(torch.ones(3, 4), torch.ones(2, 4), reduction="sum", **options)
    with pytest.warns(UserWarning) if name in _WARNS else _no_warning(), \
            pytest.raises(RuntimeError, match=rf"^{name}: The size of input \(3\) must match the size of target "
                                              r"\(2\) at non-singleton dimension 0$"):
        getattr(cn, name)(cn.ones(3, 4), cn.ones(2, 4), reduction="sum", **options)


def _no_warning():
    import contextlib  # noqa: PLC0415
    import warnings  # noqa: PLC0415

    @contextlib.contextmanager
    def none():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield
        assert not [w for w in caught if "target size" in str(w.message)]
    return none()


@pytest.mark.parametrize("shapes", [[(3, 4), (4,)], [(3, 4), (3, 1)], [(3, 4), ()]])
def test_hinge_embedding_loss_broadcasts_its_target(shapes):
    torch = pytest.importorskip("torch")
    sign = np.sign(RNG.standard_normal(shapes[1]))
    for reduction in ("mean", "none"):
        check_op(shapes[:1], lambda a: cn.hinge_embedding_loss(a, cn.tensor(sign), reduction=reduction),
                 torch_fn=lambda a: torch.nn.functional.hinge_embedding_loss(a, torch.tensor(sign),
                                                                              reduction=reduction), dtypes=("float32",))
    x = np.full(4, 0.5)  # NOTE: a smaller input broadcasts too
    check_op([(4,)], lambda a: cn.hinge_embedding_loss(a, cn.tensor(np.ones((3, 4)))),
             torch_fn=lambda a: torch.nn.functional.hinge_embedding_loss(a, torch.ones(3, 4)), arrays=[x],
             dtypes=("float32",))


def test_soft_margin_loss_broadcasts_the_target_to_the_input_only():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    sign = np.sign(RNG.standard_normal((4,)))
    check_op([(3, 4)], lambda a: cn.soft_margin_loss(a, cn.tensor(sign)),
             torch_fn=lambda a: F.soft_margin_loss(a, torch.tensor(sign)), dtypes=("float32",))
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        F.soft_margin_loss(torch.ones(4), torch.ones(3, 4))
    with pytest.raises(RuntimeError, match=r"soft_margin_loss: output with shape \(4,\) doesn't match the broadcast "
                                           r"shape \(3, 4\)"):
        cn.soft_margin_loss(cn.ones(4), cn.ones(3, 4))


def test_soft_margin_loss_target_may_not_require_grad_as_torch():
    torch = pytest.importorskip("torch")
    message = ("The function 'soft_margin_loss' is not differentiable with respect to argument 'target'. This input "
               "cannot have requires_grad True.")
    with pytest.raises(RuntimeError, match=message):
        torch.nn.functional.soft_margin_loss(torch.ones(3), torch.ones(3, requires_grad=True))
    with pytest.raises(RuntimeError, match=f"soft_margin_loss: {message}"):
        cn.soft_margin_loss(cn.ones(3), cn.ones(3, requires_grad=True))
    with cn.no_grad():  # NOTE: nothing is recorded, so nothing can ask for the gradient: allowed, as in torch
        assert cn.soft_margin_loss(cn.ones(3), cn.ones(3, requires_grad=True)).shape == ()


@pytest.mark.parametrize("shapes", [[(3, 4), (3, 1), (1, 4)], [(5,), (1,), (5,)], [(2, 3), (2, 3), (1, 1)]])
def test_margin_ranking_loss_broadcasts_inputs_of_the_same_ndim(shapes):
    torch = pytest.importorskip("torch")
    for reduction in ("mean", "none"):
        check_op(shapes, lambda a, b, t: cn.margin_ranking_loss(a, b, t, margin=0.2, reduction=reduction),
                 torch_fn=lambda a, b, t: torch.nn.functional.margin_ranking_loss(a, b, t, margin=0.2,
                                                                                  reduction=reduction),
                 dtypes=("float32",))


def test_margin_ranking_loss_refuses_inputs_of_different_ndim_as_torch():
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match="All input tensors should have same dimension"):
        torch.nn.functional.margin_ranking_loss(torch.ones(3, 4), torch.ones(4), torch.ones(3, 4))
    with pytest.raises(RuntimeError, match=r"margin_ranking_loss: All input tensors should have same dimension but "
                                           r"got sizes: input1: \(3, 4\), input2: \(4,\), target: \(3, 4\)"):
        cn.margin_ranking_loss(cn.ones(3, 4), cn.ones(4), cn.ones(3, 4))


@pytest.mark.parametrize("name, message", [
    ("binary_cross_entropy", r"Using a target size \(4,\) that is different to the input size \(3, 4\) is "
                             r"deprecated\. Please ensure they have the same size\."),
    ("binary_cross_entropy_with_logits", r"Target size \(4,\) must be the same as input size \(3, 4\)")])
def test_binary_cross_entropies_refuse_a_target_of_another_shape_as_torch(name, message):
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match=message.replace(r"\(4,\)", r"\(torch.Size\(\[4\]\)\)").replace(
            r"\(3, 4\)", r"\(torch.Size\(\[3, 4\]\)\)")):
        getattr(torch.nn.functional, name)(torch.full((3, 4), 0.5), torch.full((4,), 0.5))
    with pytest.raises(ValueError, match=f"^{name}: {message}$"):
        getattr(cn, name)(cn.full((3, 4), 0.5), cn.full((4,), 0.5))


def test_kl_div_batchmean_divides_by_the_input_batch_and_mean_warns_as_torch():
    torch = pytest.importorskip("torch")
    x, t = np.log(np.full((4,), 0.3)), np.full((3, 4), 0.5)
    got = cn.kl_div(cn.tensor(x), cn.tensor(t), reduction="batchmean")
    want = torch.nn.functional.kl_div(torch.tensor(x), torch.tensor(t), reduction="batchmean")
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-12)  # NOTE: sum / 4 (the input's size(0)), not / 3
    with pytest.warns(UserWarning, match="^reduction: 'mean' divides the total loss by both the batch size and the "
                                         "support size"):
        cn.kl_div(cn.tensor(x), cn.tensor(x), reduction="mean")


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "poisson_nll_loss", "soft_margin_loss", "kl_div"])
def test_mean_of_an_empty_loss_is_nan_without_warnings(name):
    import warnings  # noqa: PLC0415

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kw = {"reduction": "sum"} if name == "kl_div" else {}
        out = getattr(cn, name)(cn.ones(0, 3), cn.ones(0, 3), **kw)
        assert (out.item() == 0.0) if name == "kl_div" else np.isnan(out.item())
        if name != "kl_div":
            assert np.isnan(getattr(cn, name)(cn.ones(0, 3), cn.ones(0, 3), reduction="mean").item())


# ---- unbatched class-index losses: a 0-d or a (1,) target, as PyTorch (issue 16) ---------------------------------
@pytest.mark.parametrize("target", [np.array(3), np.array([3]), np.array(-100), np.array([-100])],
                         ids=["0d", "1-elem", "0d-ignored", "1-elem-ignored"])
@pytest.mark.parametrize("name, kw", [
    (name, kw) for name in ("cross_entropy", "nll_loss")
    for kw in ({}, {"reduction": "none"}, {"reduction": "sum"}, {"weight": CLASS_W}, {"label_smoothing": 0.2})
    if name == "cross_entropy" or "label_smoothing" not in kw])
def test_unbatched_class_loss_takes_a_0d_or_a_one_element_target(name, kw, target):
    torch = pytest.importorskip("torch")
    ignored = int(target.reshape(-1)[0]) == -100

    def call(lib, x, t=target):
        options = {k: (lib.tensor(v) if k == "weight" else v) for k, v in kw.items()}
        return getattr(lib.nn.functional, name)(x, lib.tensor(t), **options)

    x = RNG.standard_normal(5)
    got = call(cn, cn.tensor(x))
    if target.ndim == 1 and "label_smoothing" in kw:
        # NOTE: PyTorch's own label-smoothing path fails on this input ("output with shape [] doesn't match the
        # broadcast shape [1]"), a shape slip inside it; cupynet reads the (1,) target as 0-d here too
        want = call(torch, torch.tensor(x), target.reshape(()))
    else:
        want = call(torch, torch.tensor(x))  # NOTE: the forward with the target as given
    assert got.shape == want.shape == ()
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-12, equal_nan=True)
    # NOTE: the gradient against torch with the same target as 0-d: PyTorch's own backward of a (1,) target fails
    # ("size mismatch (got input: [5], target: [1])"); cupynet reads the (1,) target as the 0-d one throughout.
    # An all-ignored 'mean' is 0 / 0 = nan in both, with no gradient to compare numerically.
    check_op([(5,)], lambda x: call(cn, x), torch_fn=lambda x: call(torch, x, target.reshape(())),
             dtypes=("float32",), grad=not (ignored and kw.get("reduction", "mean") == "mean"))


@pytest.mark.parametrize("name", ["cross_entropy", "nll_loss"])
def test_unbatched_class_loss_refuses_other_targets_as_torch(name):
    torch = pytest.importorskip("torch")
    for target, error, message in (
            ([2, 1], ValueError, r"For 1D input, 1D target must have size 1, but got target size: 2"),
            ([[2]], RuntimeError, r"0D or 1D target tensor expected, multi-target not supported")):
        with pytest.raises(error, match=message):
            getattr(torch.nn.functional, name)(torch.randn(5), torch.tensor(target))
        with pytest.raises(error, match=f"^{name}: {message}"):
            getattr(cn, name)(cn.randn(5), cn.tensor(target))
    # NOTE: a batched input still wants its batch: (1, C) with a 0-d target is refused in both
    with pytest.raises(ValueError, match=r"Expected input batch_size \(1\) to match target batch_size \(0\)"):
        getattr(torch.nn.functional, name)(torch.randn(1, 5), torch.tensor(2))
    with pytest.raises(ValueError, match=rf"{name}: expected target of shape \(1,\) for input of shape \(1, 5\)"):
        getattr(cn, name)(cn.randn(1, 5), cn.tensor(2))


def test_cross_entropy_loss_module_takes_an_unbatched_one_element_target():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal(4)
    got = cn.nn.CrossEntropyLoss()(cn.tensor(x), cn.tensor([1]))
    want = torch.nn.CrossEntropyLoss()(torch.tensor(x), torch.tensor([1]))
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-12)


# (name, cupynet function, torch function, make inputs): every loss with PyTorch's legacy size_average / reduce
_LEGACY_LOSSES = [
    ("nll_loss", lambda r: (r.standard_normal((4, 3)), r.integers(0, 3, 4))),
    ("cross_entropy", lambda r: (r.standard_normal((4, 3)), r.integers(0, 3, 4))),
    ("mse_loss", lambda r: (r.standard_normal((4, 3)), r.standard_normal((4, 3)))),
    ("l1_loss", lambda r: (r.standard_normal((4, 3)), r.standard_normal((4, 3)))),
    ("smooth_l1_loss", lambda r: (r.standard_normal((4, 3)), r.standard_normal((4, 3)))),
    ("binary_cross_entropy", lambda r: (r.uniform(0.1, 0.9, (4, 3)), r.uniform(0, 1, (4, 3)))),
    ("binary_cross_entropy_with_logits", lambda r: (r.standard_normal((4, 3)), r.uniform(0, 1, (4, 3)))),
    ("kl_div", lambda r: (np.log(r.uniform(0.1, 1, (4, 3))), r.uniform(0.1, 1, (4, 3)))),
    ("soft_margin_loss", lambda r: (r.standard_normal((4, 3)), np.sign(r.standard_normal((4, 3))))),
    ("multi_margin_loss", lambda r: (r.standard_normal((4, 3)), r.integers(0, 3, 4))),
    ("multilabel_soft_margin_loss", lambda r: (r.standard_normal((4, 3)), r.integers(0, 2, (4, 3)).astype(float))),
]


@pytest.mark.parametrize("size_average,reduce", [(False, None), (None, False), (True, True), (False, True)])
@pytest.mark.parametrize("name,make", _LEGACY_LOSSES, ids=[row[0] for row in _LEGACY_LOSSES])
def test_legacy_size_average_and_reduce_match_torch(name, make, size_average, reduce):
    torch = pytest.importorskip("torch")
    x, t = make(np.random.default_rng(0))
    cn_t = cn.tensor(t) if t.dtype.kind == "i" else cn.tensor(t, dtype=cn.float64)
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated") as got:
        ours = getattr(cn.nn.functional, name)(cn.tensor(x), cn_t, size_average=size_average, reduce=reduce,
                                               reduction="mean")
    with pytest.warns(UserWarning) as theirs_warning:
        theirs = getattr(torch.nn.functional, name)(torch.tensor(x), torch.tensor(t), size_average=size_average,
                                                    reduce=reduce, reduction="mean")
    assert str(got[0].message) == str(theirs_warning[0].message)
    # NOTE: float64 throughout; only summation order differs
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-14)
