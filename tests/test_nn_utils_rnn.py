"""nn.utils.rnn against torch: pad_sequence, pack_padded_sequence, pad_packed_sequence, pack_sequence,
PackedSequence; values and gradients are exact (these are gathers), and bad inputs raise torch's errors."""

import re

import numpy as np
import pytest

import cupynet as cn
from cupynet.nn.utils import rnn as R

torch = pytest.importorskip("torch")
TR = torch.nn.utils.rnn


def _np(t):
    return t.detach().numpy()


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("lengths, enforce_sorted", [([5, 3, 3, 1], True), ([2, 5, 3, 5], False),
                                                     ([4, 4, 4, 4], True), ([1, 2, 3, 4], False)])
@pytest.mark.parametrize("as_tensor", [False, True])
def test_pack_and_pad_match_torch_with_gradients(batch_first, lengths, enforce_sorted, as_tensor):
    x = _x(4, 5, 3) if batch_first else _x(5, 4, 3)
    cx, tx = cn.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    c_len = cn.tensor(lengths, dtype=cn.int64) if as_tensor else lengths
    t_len = torch.tensor(lengths) if as_tensor else lengths
    cp = R.pack_padded_sequence(cx, c_len, batch_first=batch_first, enforce_sorted=enforce_sorted)
    tp = TR.pack_padded_sequence(tx, t_len, batch_first=batch_first, enforce_sorted=enforce_sorted)
    np.testing.assert_array_equal(_np(cp.data), _np(tp.data))
    assert cp.batch_sizes.numpy().tolist() == tp.batch_sizes.tolist() and cp.batch_sizes.dtype == cn.int64
    for mine, theirs in ((cp.sorted_indices, tp.sorted_indices), (cp.unsorted_indices, tp.unsorted_indices)):
        assert (mine is None) == (theirs is None)
        assert mine is None or mine.numpy().tolist() == theirs.tolist()
    c_pad, c_lengths = R.pad_packed_sequence(cp, batch_first=batch_first, padding_value=-7.0, total_length=6)
    t_pad, t_lengths = TR.pad_packed_sequence(tp, batch_first=batch_first, padding_value=-7.0, total_length=6)
    np.testing.assert_array_equal(_np(c_pad), _np(t_pad))
    assert c_lengths.numpy().tolist() == t_lengths.tolist()
    v = _x(*t_pad.shape, seed=1)
    (c_pad * cn.tensor(v)).sum().backward()
    (t_pad * torch.tensor(v)).sum().backward()
    np.testing.assert_array_equal(cx.grad.numpy(), tx.grad.numpy())


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence_matches_torch_with_gradients(batch_first, padding_side):
    arrays = [_x(n, 2, seed=n) for n in (3, 5, 1)]
    cs = [cn.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    c = R.pad_sequence(cs, batch_first=batch_first, padding_value=9.0, padding_side=padding_side)
    t = TR.pad_sequence(ts, batch_first=batch_first, padding_value=9.0, padding_side=padding_side)
    np.testing.assert_array_equal(_np(c), _np(t))
    v = _x(*t.shape, seed=2)
    (c * cn.tensor(v)).sum().backward()
    (t * torch.tensor(v)).sum().backward()
    for a, b in zip(cs, ts):
        np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())


def test_pack_sequence_unpack_and_unpad_round_trip():
    arrays = [_x(n, 2, seed=n) for n in (3, 5, 1)]
    cp = R.pack_sequence([cn.tensor(a) for a in arrays], enforce_sorted=False)
    tp = TR.pack_sequence([torch.tensor(a) for a in arrays], enforce_sorted=False)
    np.testing.assert_array_equal(_np(cp.data), _np(tp.data))
    for got, want in zip(R.unpack_sequence(cp), arrays):
        np.testing.assert_array_equal(_np(got), want)
    padded = R.pad_sequence([cn.tensor(a) for a in arrays], batch_first=True)
    for got, want in zip(R.unpad_sequence(padded, [3, 5, 1], batch_first=True), arrays):
        np.testing.assert_array_equal(_np(got), want)


def test_packed_sequence_fields_and_casts():
    packed = R.pack_sequence([cn.tensor(_x(3, 2)), cn.tensor(_x(1, 2))])
    data, batch_sizes, sorted_indices, unsorted_indices = packed
    assert batch_sizes.numpy().tolist() == [2, 1, 1] and sorted_indices is None and unsorted_indices is None
    assert packed.float().data.dtype == cn.float32 and packed.double().data.dtype == cn.float64
    assert packed.half().data.dtype == cn.float16 and packed.to(cn.float64) is packed and not packed.is_cuda
    rebuilt = R.PackedSequence(data, batch_sizes, cn.tensor([1, 0], dtype=cn.int64))
    assert rebuilt.unsorted_indices.numpy().tolist() == [1, 0]
    assert R.PackedSequence((data, batch_sizes)).batch_sizes is batch_sizes


def _raises(error, message):
    return pytest.raises(error, match=re.escape(message))


def test_bad_inputs_raise_torch_errors():
    x = cn.zeros(4, 3, 2)
    with _raises(RuntimeError, "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True"):
        R.pack_padded_sequence(x, [2, 4, 1])
    with _raises(RuntimeError, "`lengths` array must be sorted in decreasing order"):
        R.pack_sequence([cn.zeros(2, 3), cn.zeros(3, 3)])
    with _raises(RuntimeError, "Length of all samples has to be greater than 0"):
        R.pack_padded_sequence(x, [4, 2, 0])
    with _raises(RuntimeError, "Expected `len(lengths)` to be equal to batch_size, but got 2 (batch_size=3)"):
        R.pack_padded_sequence(x, [4, 2])
    with _raises(ValueError, "a sequence of length 5 does not fit the 4 time steps"):
        R.pack_padded_sequence(x, [5, 2, 1])
    with _raises(RuntimeError, "'lengths' argument should be a 1D CPU int64 tensor"):
        R.pack_padded_sequence(x, cn.tensor([[4, 2, 1]]))
    with _raises(RuntimeError, "received an empty list of sequences"):
        R.pad_sequence([])
    with _raises(RuntimeError, "Expected padding_side to be one of left or right, but got mid."):
        R.pad_sequence([cn.zeros(2, 3)], padding_side="mid")
    with _raises(RuntimeError, "every sequence must have the same trailing dimensions, got (2, 3) and (3, 4)"):
        R.pad_sequence([cn.zeros(2, 3), cn.zeros(3, 4)])
    with _raises(ValueError, "Expected total_length to be at least the length of the longest sequence in input, "
                             "but got total_length=2 and max sequence length being 4"):
        R.pad_packed_sequence(R.pack_padded_sequence(x, [4, 2, 1]), total_length=2)
    with _raises(TypeError, "pad_packed_sequence: expected a PackedSequence, got Tensor"):
        R.pad_packed_sequence(x)
