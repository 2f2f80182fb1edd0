"""The losses of issue 13 against PyTorch: pairwise_distance, triplet_margin_loss, cosine_embedding_loss,
multi_margin_loss, multilabel_margin_loss, multilabel_soft_margin_loss, gaussian_nll_loss, their layers
(and HingeEmbeddingLoss), their AMP policy and their refusals.

``check_op`` compares forward values and gradients with torch's and runs gradcheck and gradgradcheck in
float64; the fp32-list losses differentiate their expression again in backward, so the second derivative
is checked too.
"""

import numpy as np
import pytest
from op_harness import check_op, requires_torch

import cupynet as cn
import cupynet.nn as nn
import cupynet.nn.functional as F
from cupynet import amp

torch = pytest.importorskip("torch")
TF = torch.nn.functional
REDUCTIONS = ("mean", "sum", "none")
_SIGNS = np.array([1, -1, -1, 1, 1])
_CLASSES = np.array([0, 3, 1, 3, 2])
_LABELS = np.array([[0, 3, -1, 1], [2, -1, 0, 0], [1, 2, 3, 0], [-1, 1, 1, 1], [3, 3, 0, -1]])


@requires_torch
@pytest.mark.parametrize("kwargs", [{}, {"p": 1.0}, {"p": 3.0, "keepdim": True}, {"eps": 0.0}])
def test_pairwise_distance(kwargs):
    check_op([(5, 4), (5, 4)], lambda a, b: F.pairwise_distance(a, b, **kwargs),
             torch_fn=lambda a, b: TF.pairwise_distance(a, b, **kwargs))


@requires_torch
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("kwargs", [{}, {"swap": True}, {"p": 1, "margin": 0.3}])
def test_triplet_margin_loss(reduction, kwargs):
    check_op([(5, 4)] * 3, lambda a, p, n: F.triplet_margin_loss(a, p, n, reduction=reduction, **kwargs),
             torch_fn=lambda a, p, n: TF.triplet_margin_loss(a, p, n, reduction=reduction, **kwargs))


@requires_torch
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin", [0.0, 0.2])
def test_cosine_embedding_loss(reduction, margin):
    # NOTE: targets and weights are made inside the lambdas, so check_op's device context puts them beside the inputs
    theirs = torch.tensor(_SIGNS)
    check_op([(5, 4)] * 2,
             lambda a, b: F.cosine_embedding_loss(a, b, cn.tensor(_SIGNS), margin=margin, reduction=reduction),
             torch_fn=lambda a, b: TF.cosine_embedding_loss(a, b, theirs, margin=margin, reduction=reduction))


@requires_torch
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(("p", "margin", "weighted"), [(1, 1.0, False), (2, 0.5, True), (1, 2.0, True)])
def test_multi_margin_loss(reduction, p, margin, weighted):
    theirs = torch.tensor(_CLASSES)
    w = np.array([0.5, 1.0, 2.0, 1.5])
    tw = torch.tensor(w) if weighted else None
    check_op([(5, 4)], lambda x: F.multi_margin_loss(x, cn.tensor(_CLASSES), p=p, margin=margin,
                                                     weight=cn.tensor(w) if weighted else None, reduction=reduction),
             torch_fn=lambda x: TF.multi_margin_loss(x, theirs, p=p, margin=margin, weight=tw, reduction=reduction))


@requires_torch
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_margin_loss(reduction):
    theirs = torch.tensor(_LABELS)
    check_op([(5, 4)], lambda x: F.multilabel_margin_loss(x, cn.tensor(_LABELS), reduction=reduction),
             torch_fn=lambda x: TF.multilabel_margin_loss(x, theirs, reduction=reduction))


@requires_torch
def test_one_sample_margin_losses_take_1d_input():
    check_op([(4,)], lambda x: F.multilabel_margin_loss(x, cn.tensor([2, 0, -1, 3]), reduction="none"),
             torch_fn=lambda x: TF.multilabel_margin_loss(x, torch.tensor([2, 0, -1, 3]), reduction="none"))
    check_op([(4,)], lambda x: F.multi_margin_loss(x, cn.tensor(1), reduction="none"),
             torch_fn=lambda x: TF.multi_margin_loss(x, torch.tensor(1), reduction="none"))


@requires_torch
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_multilabel_soft_margin_loss(reduction, weighted):
    w = np.array([0.5, 1.0, 2.0, 1.5])
    tw = torch.tensor(w) if weighted else None
    check_op([(5, 4), (5, 4)],
             lambda x, t: F.multilabel_soft_margin_loss(x, t, weight=cn.tensor(w) if weighted else None,
                                                        reduction=reduction),
             torch_fn=lambda x, t: TF.multilabel_soft_margin_loss(x, t, weight=tw, reduction=reduction),
             low=0.0, high=1.0)


@requires_torch
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(("var_shape", "kwargs"), [((5, 4), {}), ((5,), {"full": True}), ((5, 1), {"eps": 0.3})])
def test_gaussian_nll_loss(reduction, var_shape, kwargs):
    # NOTE: variances in (0.05, 2): with eps=0.3 some are clamped, and the gradient passes through the clamp
    rng = np.random.default_rng(4)
    arrays = [rng.uniform(-2, 2, (5, 4)), rng.uniform(-2, 2, (5, 4)), rng.uniform(0.05, 2.0, var_shape)]
    check_op(None, lambda x, t, v: F.gaussian_nll_loss(x, t, v, reduction=reduction, **kwargs),
             torch_fn=lambda x, t, v: TF.gaussian_nll_loss(x, t, v, reduction=reduction, **kwargs), arrays=arrays,
             gradgrad=not kwargs.get("eps"))


def test_gaussian_nll_loss_takes_a_float_var():
    x, t = np.arange(6.0).reshape(2, 3), np.ones((2, 3))
    got = F.gaussian_nll_loss(cn.tensor(x), cn.tensor(t), 0.5)
    np.testing.assert_allclose(got.item(), TF.gaussian_nll_loss(torch.tensor(x), torch.tensor(t), 0.5).item())


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda: F.triplet_margin_loss(cn.ones(2, 3), cn.ones(2, 3), cn.ones(3)), RuntimeError,
     "same number of dimensions"),
    (lambda: F.triplet_margin_loss(cn.ones(2, 3), cn.ones(2, 3), cn.ones(2, 3), reduction="avg"), ValueError,
     "reduction"),
    (lambda: F.triplet_margin_loss(cn.ones(2, 3), cn.ones(2, 3), cn.ones(2, 3), size_average="sum"), TypeError,
     "deprecated"),
    (lambda: F.cosine_embedding_loss(cn.ones(2, 3), cn.ones(2, 3), cn.ones(2, 1)), RuntimeError,
     "multi-target not supported"),
    (lambda: F.cosine_embedding_loss(cn.ones(3), cn.ones(3), cn.ones(2)), RuntimeError,
     "1D target tensor expects 2D input tensors"),
    (lambda: F.multi_margin_loss(cn.ones(2, 3), cn.tensor([0, 1]), p=3), ValueError, "only p == 1 and p == 2"),
    (lambda: F.multi_margin_loss(cn.ones(2, 3), cn.tensor([0, 3])), (RuntimeError, IndexError, ValueError),
     "target out of range"),
    (lambda: F.multi_margin_loss(cn.ones(2, 3), cn.tensor([0.0, 1.0])), RuntimeError, "integer dtype"),
    (lambda: F.multi_margin_loss(cn.ones(2, 3), cn.tensor([0, 1, 2])), RuntimeError, "inconsistent target size"),
    (lambda: F.multi_margin_loss(cn.ones(2, 3), cn.tensor([0, 1]), weight=cn.ones(2)), RuntimeError,
     "inconsistent weight size"),
    (lambda: F.multilabel_margin_loss(cn.ones(2, 3), cn.tensor([[0, 5, -1], [1, -1, 0]])),
     (RuntimeError, IndexError, ValueError), "target out of range"),
    (lambda: F.multilabel_margin_loss(cn.ones(2, 3), cn.tensor([0, 1])), RuntimeError, "inconsistent target size"),
    (lambda: F.multilabel_margin_loss(cn.ones(2, 3, 4), cn.zeros(2, 3, 4).long()), RuntimeError,
     "non-empty vector or matrix"),
    (lambda: F.gaussian_nll_loss(cn.ones(2, 3), cn.ones(2, 3), -cn.ones(2, 3)), ValueError, "negative entry"),
    (lambda: F.gaussian_nll_loss(cn.ones(2, 3), cn.ones(2, 3), cn.ones(3, 3)), ValueError, "var is of incorrect size"),
    (lambda: F.gaussian_nll_loss(cn.ones(2, 3), cn.ones(2, 3), cn.ones(2, 3), reduction="avg"), ValueError,
     "avg is not valid"),
    (lambda: F.pairwise_distance(cn.ones(2, 3), cn.ones(2, 4)), RuntimeError, "size"),
    (lambda: F.multilabel_soft_margin_loss(cn.ones(()), cn.ones(())), RuntimeError, "class dimension"),
])
def test_bad_inputs_are_refused(call, error, match):
    with pytest.raises(error, match=match):
        call()


@requires_torch
@pytest.mark.parametrize(("make", "make_torch", "inputs"), [
    (lambda: nn.PairwiseDistance(p=1.0), lambda: torch.nn.PairwiseDistance(p=1.0), ("x", "x")),
    (lambda: nn.TripletMarginLoss(margin=0.5, swap=True), lambda: torch.nn.TripletMarginLoss(margin=0.5, swap=True),
     ("x", "x", "x")),
    (lambda: nn.CosineEmbeddingLoss(0.1), lambda: torch.nn.CosineEmbeddingLoss(0.1), ("x", "x", "sign")),
    (lambda: nn.MultiLabelSoftMarginLoss(), lambda: torch.nn.MultiLabelSoftMarginLoss(), ("x", "x")),
    (lambda: nn.GaussianNLLLoss(full=True), lambda: torch.nn.GaussianNLLLoss(full=True), ("x", "x", "var")),
    (lambda: nn.MultiMarginLoss(p=2), lambda: torch.nn.MultiMarginLoss(p=2), ("x", "class")),
    (lambda: nn.MultiLabelMarginLoss(), lambda: torch.nn.MultiLabelMarginLoss(), ("x", "labels")),
    (lambda: nn.HingeEmbeddingLoss(0.5, reduction="sum"), lambda: torch.nn.HingeEmbeddingLoss(0.5, reduction="sum"),
     ("row", "sign")),
])
def test_layers_match_torch(make, make_torch, inputs):
    rng = np.random.default_rng(0)
    values = {"sign": lambda: _SIGNS, "class": lambda: _CLASSES, "labels": lambda: _LABELS,
              "x": lambda: rng.uniform(-2, 2, (5, 4)), "row": lambda: rng.uniform(-2, 2, 5),
              "var": lambda: rng.uniform(0.1, 2, (5, 4))}
    arrays = [values[kind]() for kind in inputs]
    got = make()(*(cn.tensor(a) for a in arrays))
    want = make_torch()(*(torch.tensor(a) for a in arrays))
    np.testing.assert_allclose(got.array, want.numpy(), rtol=1e-12, atol=1e-14)


def test_layer_weight_is_a_buffer_and_bad_legacy_arguments_are_refused():
    assert list(nn.MultiMarginLoss(weight=cn.ones(3)).state_dict()) == ["weight"]
    with pytest.raises(TypeError, match="deprecated"):
        nn.TripletMarginLoss(size_average="mean")
    with pytest.raises(ValueError, match="reduction"):
        nn.CosineEmbeddingLoss(reduction="avg")


@pytest.mark.parametrize("dtype", [cn.float16, cn.bfloat16])
def test_fp32_list_losses_run_in_float32_under_autocast_and_backprop(dtype):
    rng = np.random.default_rng(1)
    a, p, n = (cn.tensor(rng.uniform(-1, 1, (5, 4)), dtype=dtype, requires_grad=True) for _ in range(3))
    with amp.autocast("cpu", dtype=dtype):
        loss = F.triplet_margin_loss(a, p, n) + F.cosine_embedding_loss(a, p, cn.tensor(_SIGNS))
        loss = loss + F.multi_margin_loss(a, cn.tensor(_CLASSES)) + F.multilabel_margin_loss(a, cn.tensor(_LABELS))
    assert loss.dtype == cn.float32
    loss.backward()
    assert a.grad.dtype == dtype and np.isfinite(a.grad.float().array).all()


def test_half_inputs_compute_in_float32_and_round_once():
    rng = np.random.default_rng(2)
    x = rng.uniform(-2, 2, (5, 4))
    half = F.multi_margin_loss(cn.tensor(x, dtype=cn.float16), cn.tensor(_CLASSES))
    wide = TF.multi_margin_loss(torch.tensor(x, dtype=torch.float16).double(), torch.tensor(_CLASSES))
    assert half.dtype == cn.float16
    np.testing.assert_allclose(float(half.item()), wide.item(), rtol=2.0 ** -10)


@pytest.mark.parametrize(("name", "kwargs"), [
    ("PairwiseDistance", {"p": 1.0}), ("TripletMarginLoss", {"margin": 0.5}), ("CosineEmbeddingLoss", {}),
    ("MultiLabelSoftMarginLoss", {}), ("GaussianNLLLoss", {"full": True}), ("MultiMarginLoss", {"p": 2}),
    ("MultiLabelMarginLoss", {}), ("HingeEmbeddingLoss", {"margin": 2.0}),
])
def test_repr_is_torchs(name, kwargs):
    assert repr(getattr(nn, name)(**kwargs)) == repr(getattr(torch.nn, name)(**kwargs))


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "smooth_l1_loss"])
@pytest.mark.parametrize("target_dtype", ["int64", "int32", "bool"])
@pytest.mark.parametrize("input_dtype", ["float32", "float64"])
def test_distance_losses_promote_an_integer_target_as_torch(name, target_dtype, input_dtype):
    if name == "l1_loss" and target_dtype == "bool":
        pytest.skip("torch refuses a bool target of l1_loss (it subtracts it): tested below")
    # NOTE: issue 13: pytorch/tutorials blitz/neural_networks_tutorial compares a float output with
    # torch.arange(1, 11) (an int64 target); torch promotes it to the input's dtype
    values = np.linspace(-2.0, 3.0, 6).reshape(2, 3)
    target = (np.arange(6).reshape(2, 3) % (2 if target_dtype == "bool" else 4)).astype(target_dtype)
    ours_x = cn.tensor(values, dtype=getattr(cn, input_dtype), requires_grad=True)
    theirs_x = torch.tensor(values, dtype=getattr(torch, input_dtype), requires_grad=True)
    ours = getattr(F, name)(ours_x, cn.tensor(target))
    theirs = getattr(torch.nn.functional, name)(theirs_x, torch.tensor(target))
    ours.backward()
    theirs.backward()
    assert str(ours.dtype) == input_dtype == str(theirs.dtype).removeprefix("torch.")
    # NOTE: six exact inputs, one subtraction, a square or abs, a mean: a few roundings of the dtype
    eps = 8 * np.finfo(input_dtype).eps
    np.testing.assert_allclose(ours.array, theirs.detach().numpy(), rtol=eps, atol=eps)
    np.testing.assert_allclose(ours_x.grad.array, theirs_x.grad.numpy(), rtol=eps, atol=eps)


@pytest.mark.parametrize("call, error, match", [
    (lambda: F.mse_loss(cn.arange(3), cn.arange(3)), TypeError,
     "mse_loss: expected a floating point input or target .*; got int64 and int64"),
    (lambda: F.huber_loss(cn.ones(3), cn.arange(3)), TypeError, "huber_loss: expected a floating point target"),
    (lambda: F.l1_loss(cn.ones(3), cn.ones(3, dtype=cn.bool)), TypeError, "the other floating or integer; got"),
])
def test_integer_operands_refused_where_torch_refuses(call, error, match):
    with pytest.raises(error, match=match):
        call()
