"""``F.embedding_bag`` and ``nn.EmbeddingBag`` against PyTorch (issue 13): sum/mean/max, 2-D bags, offsets
(with include_last_offset and empty bags), per_sample_weights, padding_idx, max_norm; gradients of the
weight and of per_sample_weights with gradcheck/gradgradcheck in float64; the refusals.
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
# NOTE: bag 1 is empty (offsets 4, 4), index 2 appears in two bags, 9 is the last row
_FLAT = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0, 0])
_OFFSETS = np.array([0, 4, 4, 7])
_BAGS = np.array([[1, 2, 4, 2], [5, 0, 3, 3], [9, 2, 2, 2]])


def _bag(lib, flat, weight, **kwargs):
    """``embedding_bag`` of ``lib`` over the shared bags, whose index tensors are made here: on the default device."""
    make = cn.tensor if lib is cn else torch.tensor
    offsets = make(_OFFSETS) if flat else None
    return (F if lib is cn else TF).embedding_bag(make(_FLAT if flat else _BAGS), weight, offsets, **kwargs)


@requires_torch
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("flat", [True, False], ids=["offsets", "2d"])
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_modes_match_torch(mode, flat, padding_idx):
    # NOTE: distinct values per column, so max has no ties and its gradient is unique
    check_op([(10, 3)], lambda w: _bag(cn, flat, w, mode=mode, padding_idx=padding_idx),
             torch_fn=lambda w: _bag(torch, flat, w, mode=mode, padding_idx=padding_idx),
             arrays=[np.random.default_rng(1).permutation(30).reshape(10, 3) / 7.0 - 2.0])


@requires_torch
@pytest.mark.parametrize("flat", [True, False], ids=["offsets", "2d"])
def test_per_sample_weights_get_gradients(flat):
    shape = (_FLAT if flat else _BAGS).shape
    check_op([(10, 3), shape], lambda w, p: _bag(cn, flat, w, mode="sum", per_sample_weights=p),
             torch_fn=lambda w, p: _bag(torch, flat, w, mode="sum", per_sample_weights=p))


@requires_torch
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_include_last_offset(mode):
    offsets = np.array([0, 3, 3, 10])  # NOTE: the last entry is the input's length, as torch documents
    check_op([(10, 3)], lambda w: F.embedding_bag(cn.tensor(_FLAT), w, cn.tensor(offsets), mode=mode,
                                                   include_last_offset=True),
             torch_fn=lambda w: TF.embedding_bag(torch.tensor(_FLAT), w, torch.tensor(offsets), mode=mode,
                                                 include_last_offset=True),
             arrays=[np.random.default_rng(2).permutation(30).reshape(10, 3) / 7.0])


def test_max_norm_renormalizes_looked_up_rows_in_place_as_torch():
    w = np.random.default_rng(3).normal(size=(10, 3)) * 3
    ours, theirs = cn.tensor(w), torch.tensor(w)
    got = F.embedding_bag(cn.tensor(_FLAT), ours, cn.tensor(_OFFSETS), max_norm=1.0)
    want = TF.embedding_bag(torch.tensor(_FLAT), theirs, torch.tensor(_OFFSETS), max_norm=1.0)
    np.testing.assert_allclose(got.array, want.numpy(), rtol=1e-6)
    np.testing.assert_allclose(ours.array, theirs.numpy(), rtol=1e-6)


def test_empty_input_gives_zero_bags():
    out = F.embedding_bag(cn.tensor(np.zeros(0, dtype=np.int64)), cn.ones(4, 2), cn.tensor([0, 0]))
    want = TF.embedding_bag(torch.zeros(0, dtype=torch.long), torch.ones(4, 2), torch.tensor([0, 0]))
    assert out.shape == tuple(want.shape) and out.tolist() == want.tolist()


def test_half_weight_keeps_its_dtype_alone_and_under_autocast():
    w = cn.tensor(np.random.default_rng(4).normal(size=(10, 3)), dtype=cn.float16, requires_grad=True)
    assert F.embedding_bag(cn.tensor(_BAGS), w).dtype == cn.float16
    with amp.autocast("cpu", dtype=cn.float16):
        out = F.embedding_bag(cn.tensor(_BAGS), w, mode="sum")
    assert out.dtype == cn.float16  # NOTE: unlisted in PyTorch's autocast lists: the weight's dtype
    out.float().sum().backward()
    assert w.grad.dtype == cn.float16


@requires_torch
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_layer_matches_torch_with_the_same_weight(mode):
    torch_layer = torch.nn.EmbeddingBag(10, 3, mode=mode, padding_idx=4)
    layer = nn.EmbeddingBag.from_pretrained(cn.tensor(torch_layer.weight.detach().numpy()), freeze=False, mode=mode,
                                            padding_idx=4)
    assert repr(layer) == repr(torch_layer)
    got = layer(cn.tensor(_FLAT), cn.tensor(_OFFSETS))
    want = torch_layer(torch.tensor(_FLAT), torch.tensor(_OFFSETS))
    np.testing.assert_allclose(got.array, want.detach().numpy(), rtol=1e-6)
    got.sum().backward()
    want.sum().backward()
    np.testing.assert_allclose(layer.weight.grad.array, torch_layer.weight.grad.numpy(), rtol=1e-6)


def test_layer_init_zeroes_the_padding_row_and_freezes_from_pretrained():
    layer = nn.EmbeddingBag(6, 4, padding_idx=-1)
    assert layer.padding_idx == 5 and layer.weight.array[5].tolist() == [0.0] * 4
    assert layer.weight.array[:5].std() > 0.1
    assert not nn.EmbeddingBag.from_pretrained(cn.ones(3, 2)).weight.requires_grad
    assert list(layer.state_dict()) == ["weight"]


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda: F.embedding_bag(cn.tensor(_FLAT), cn.ones(10, 3), cn.tensor([1, 4])), ValueError,
     "offsets\\[0\\] has to be 0"),
    (lambda: F.embedding_bag(cn.tensor(_FLAT), cn.ones(10, 3), cn.tensor([0, 5, 2])), ValueError, "non-decreasing"),
    (lambda: F.embedding_bag(cn.tensor(_FLAT), cn.ones(10, 3), cn.tensor([0, 11])), ValueError, "at most"),
    (lambda: F.embedding_bag(cn.tensor(_FLAT), cn.ones(10, 3)), ValueError, "offsets has to be a 1D"),
    (lambda: F.embedding_bag(cn.tensor(_BAGS), cn.ones(10, 3), cn.tensor([0])), ValueError, "offsets has to be None"),
    (lambda: F.embedding_bag(cn.tensor(_BAGS[None]), cn.ones(10, 3)), ValueError, "1D or 2D"),
    (lambda: F.embedding_bag(cn.tensor(_BAGS), cn.ones(10, 3), mode="min"), ValueError, "sum, mean or max"),
    (lambda: F.embedding_bag(cn.tensor(_BAGS), cn.ones(10, 3), per_sample_weights=cn.ones(3, 4)),
     NotImplementedError, "only supported for mode='sum'"),
    (lambda: F.embedding_bag(cn.tensor(_BAGS), cn.ones(10, 3), mode="sum", per_sample_weights=cn.ones(4)),
     ValueError, "same shape as the input"),
    (lambda: F.embedding_bag(cn.tensor(_BAGS), cn.ones(5, 3)), (IndexError, ValueError, RuntimeError),
     "index out of range"),
    (lambda: F.embedding_bag(cn.tensor(_BAGS), cn.ones(10, 3), scale_grad_by_freq=True), NotImplementedError,
     "scale_grad_by_freq"),
    (lambda: nn.EmbeddingBag(10, 3, mode="min"), ValueError, "sum, mean or max"),
    (lambda: nn.EmbeddingBag(10, 3, padding_idx=10), ValueError, "padding_idx"),
    (lambda: nn.EmbeddingBag(10, 3)(cn.ones(2, 2)), TypeError, "integer index tensor"),
])
def test_bad_inputs_are_refused(call, error, match):
    with pytest.raises(error, match=match):
        call()
