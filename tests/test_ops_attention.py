"""scaled_dot_product_attention, embedding and one_hot: against PyTorch, gradcheck, bad inputs, AMP."""

import numpy as np
import pytest
from op_harness import check_op

import cupynet as cn
from cupynet import amp
from cupynet.ops.attention import ScaledDotProductAttention
from cupynet.ops.embedding import Embedding, EmbeddingBackward

RNG = np.random.default_rng(0)
QKV = [(2, 3, 4), (2, 5, 4), (2, 5, 3)]


def _sdpa(module):
    return (cn.scaled_dot_product_attention if module is cn
            else module.nn.functional.scaled_dot_product_attention)


def test_sdpa_plain_scaled_and_4d():
    torch = pytest.importorskip("torch")
    check_op(QKV, _sdpa(cn), torch_fn=_sdpa(torch))
    check_op(QKV, lambda q, k, v: _sdpa(cn)(q, k, v, scale=0.3),
             torch_fn=lambda q, k, v: _sdpa(torch)(q, k, v, scale=0.3))
    check_op([(1, 2, 3, 2), (1, 2, 4, 2), (1, 2, 4, 3)], _sdpa(cn), torch_fn=_sdpa(torch), gradgrad=False)


def test_sdpa_causal_and_masks():
    torch = pytest.importorskip("torch")
    check_op([(2, 4, 3), (2, 4, 3), (2, 4, 2)], lambda q, k, v: _sdpa(cn)(q, k, v, is_causal=True),
             torch_fn=lambda q, k, v: _sdpa(torch)(q, k, v, is_causal=True))
    bool_mask = RNG.random((3, 5)) > 0.4
    bool_mask[:, 0] = True
    check_op(QKV, lambda q, k, v: _sdpa(cn)(q, k, v, attn_mask=cn.tensor(bool_mask)),
             torch_fn=lambda q, k, v: _sdpa(torch)(q, k, v, attn_mask=torch.tensor(bool_mask)))
    float_mask = RNG.standard_normal((3, 5))
    check_op(QKV, lambda q, k, v: _sdpa(cn)(q, k, v, attn_mask=cn.tensor(float_mask)),
             torch_fn=lambda q, k, v: _sdpa(torch)(q, k, v, attn_mask=torch.tensor(float_mask)), gradgrad=False)


def test_sdpa_fully_masked_row_gives_zeros_not_nan():
    q, k, v = (cn.randn(*s, requires_grad=True) for s in QKV)
    mask = np.ones((3, 5), dtype=bool)
    mask[1] = False
    out = cn.scaled_dot_product_attention(q, k, v, attn_mask=cn.tensor(mask))
    assert np.all(out.detach().numpy()[:, 1] == 0) and np.all(np.isfinite(out.detach().numpy()))
    out.sum().backward()
    assert all(np.all(np.isfinite(t.grad.numpy())) for t in (q, k, v))


def test_sdpa_dropout_scales_kept_weights_and_backward_uses_same_mask():
    cn.manual_seed(0)
    q, k = cn.zeros(1, 64, 4), cn.zeros(1, 64, 4)
    v = cn.ones(1, 64, 1, requires_grad=True)
    out = cn.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    # NOTE: uniform weights 1/64 with half dropped and the rest doubled: each row averages about 1
    assert abs(float(out.detach().numpy().mean()) - 1.0) < 0.1
    out.sum().backward()
    # NOTE: dV = P_dropped^T @ 1, so the total gradient equals the total output
    np.testing.assert_allclose(v.grad.numpy().sum(), out.detach().numpy().sum(), rtol=1e-5)


def test_sdpa_half_and_autocast():
    assert ScaledDotProductAttention.amp_policy == "lower"
    q, k, v = (cn.randn(*s) for s in QKV)
    ref = cn.scaled_dot_product_attention(q, k, v).numpy()
    with amp.autocast("cpu", dtype=cn.float16):
        out = cn.scaled_dot_product_attention(q, k, v, attn_mask=cn.zeros(3, 5))
    assert out.dtype == cn.float16
    np.testing.assert_allclose(out.numpy().astype(np.float64), ref, atol=2e-2)


def test_sdpa_bad_inputs():
    q, k, v = (cn.randn(*s) for s in QKV)
    with pytest.raises(ValueError, match="scaled_dot_product_attention: Expected query, key, and value to have the "
                                         "same dtype"):
        cn.scaled_dot_product_attention(q, k.half(), v)
    with pytest.raises(ValueError, match=r"expected query \(..., L, E\), key \(..., S, E\) and value"):
        cn.scaled_dot_product_attention(q, cn.randn(2, 5, 3), v)
    with pytest.raises(ValueError, match="Explicit attn_mask should not be set when is_causal=True"):
        cn.scaled_dot_product_attention(q, k, v, attn_mask=cn.ones(3, 5), is_causal=True)
    with pytest.raises(ValueError, match=r"attn_mask of shape \(4, 5\) does not broadcast to the attention scores' "
                                         r"shape \(2, 3, 5\)"):
        cn.scaled_dot_product_attention(q, k, v, attn_mask=cn.ones(4, 5))
    with pytest.raises(TypeError, match="attn_mask must be a bool or floating Tensor, got int64"):
        cn.scaled_dot_product_attention(q, k, v, attn_mask=cn.tensor([[1] * 5] * 3))
    with pytest.raises(ValueError, match=r"dropout_p must be a number in \[0, 1\), got 1.0"):
        cn.scaled_dot_product_attention(q, k, v, dropout_p=1.0)


IDX = np.array([[0, 2, 4], [2, 2, 1]])


def test_embedding_matches_torch_with_double_backward():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    check_op([(5, 3)], lambda w: cn.embedding(cn.tensor(IDX), w) ** 2,
             torch_fn=lambda w: F.embedding(torch.tensor(IDX), w) ** 2)


@pytest.mark.parametrize("padding_idx,freq", [(2, False), (-1, True), (None, True)])
def test_embedding_padding_and_freq_gradients_match_torch(padding_idx, freq):
    torch = pytest.importorskip("torch")
    w = RNG.standard_normal((5, 3))
    g = RNG.standard_normal((2, 3, 3))
    cw, tw = cn.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    out = cn.embedding(cn.tensor(IDX), cw, padding_idx=padding_idx, scale_grad_by_freq=freq)
    (out * cn.tensor(g)).sum().backward()
    tout = torch.nn.functional.embedding(torch.tensor(IDX), tw, padding_idx=padding_idx, scale_grad_by_freq=freq)
    (tout * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy())
    np.testing.assert_allclose(cw.grad.numpy(), tw.grad.numpy(), rtol=1e-5, atol=1e-12)
    if padding_idx is not None:
        assert np.all(cw.grad.numpy()[padding_idx] == 0)


def test_embedding_half_gradient_accumulates_in_fp32():
    w = cn.zeros(3, 2, dtype=cn.float16, requires_grad=True)
    idx = cn.tensor(np.ones(4096, dtype=np.int64))
    (cn.embedding(idx, w) * 0.1).sum().backward()
    # NOTE: 4096 * 0.1 = 409.6 (rounds to 409.5 in half); a half accumulator would stall far below it
    np.testing.assert_allclose(w.grad.numpy().astype(np.float64)[1], 409.5, atol=0.6)
    assert w.grad.dtype == cn.float16 and np.all(w.grad.numpy()[[0, 2]] == 0)


def test_embedding_max_norm_renormalizes_rows_in_place():
    w = cn.tensor([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]])
    cn.embedding(cn.tensor([0, 1]), w, max_norm=1.0)
    norms = np.linalg.norm(w.numpy(), axis=1)
    np.testing.assert_allclose(norms, [1.0, 0.5, 10.0], rtol=1e-5)
    assert w._version == 1


def test_embedding_and_one_hot_bad_inputs():
    w = cn.randn(5, 3)
    with pytest.raises(IndexError, match=r"embedding: Target 7 is out of bounds \(index out of range: expected "
                                         r"indices in \[0, 4\] for num_embeddings=5\)"):
        cn.embedding(cn.tensor([1, 7]), w)
    with pytest.raises(IndexError, match="embedding: Target -1 is out of bounds"):
        cn.embedding(cn.tensor([-1]), w)
    with pytest.raises(TypeError, match="embedding: expected input to be an integer"):
        cn.embedding(cn.tensor([1.0]), w)
    with pytest.raises(ValueError, match=r"embedding: padding_idx must be within num_embeddings \(5\), got 5"):
        cn.embedding(cn.tensor([1]), w, padding_idx=5)
    with pytest.raises(NotImplementedError, match="embedding: sparse gradients are not supported"):
        cn.embedding(cn.tensor([1]), w, sparse=True)
    with pytest.raises(ValueError, match="one_hot: Class values must be non-negative."):
        cn.one_hot(cn.tensor([1, -1]))
    with pytest.raises(ValueError, match=r"one_hot: Class values must be smaller than num_classes \(3\)."):
        cn.one_hot(cn.tensor([1, 3]), num_classes=3)


def test_one_hot_and_policy():
    out = cn.one_hot(cn.tensor([[0, 2], [1, 1]]))
    assert out.dtype == cn.int64 and out.shape == (2, 2, 3)
    np.testing.assert_array_equal(out.numpy(), np.eye(3, dtype=np.int64)[[[0, 2], [1, 1]]])
    assert cn.one_hot(cn.tensor([0, 1]), num_classes=4).shape == (2, 4)
    assert Embedding.amp_policy is None and EmbeddingBackward.amp_policy is None


def _sdpa_grads(create_graph, dtype, shapes, **kw):
    """Gradients of q, k, v (and a float mask that requires grad) through the array or the graph backward."""
    rng = np.random.default_rng(1)
    leaves = [cn.tensor(rng.standard_normal(s), dtype=dtype, requires_grad=True) for s in shapes]
    mask = kw.pop("grad_mask", None)
    if mask is not None:
        mask = cn.tensor(rng.standard_normal(mask), dtype=dtype, requires_grad=True)
        leaves.append(mask)
        kw["attn_mask"] = mask
    cn.manual_seed(3)
    out = cn.scaled_dot_product_attention(*leaves[:3], **kw)
    seed = cn.tensor(rng.standard_normal(out.shape), dtype=out.dtype)
    return [g.detach().numpy().astype(np.float64)
            for g in cn.autograd.grad(out, leaves, seed, create_graph=create_graph)]


@pytest.mark.parametrize("kw", [{}, {"is_causal": True}, {"scale": 0.3, "dropout_p": 0.4},
                                {"attn_mask": "bool"}, {"grad_mask": (3, 5)}, {"broadcast_kv": True}],
                         ids=["plain", "causal", "scale-dropout", "bool-mask", "grad-mask", "broadcast-kv"])
@pytest.mark.parametrize("dtype", ["float64", "bfloat16"])
def test_sdpa_array_backward_matches_the_graph_backward(kw, dtype):
    # NOTE: the first-order array backward runs the graph backward's formulas in the same dtypes: equal
    # to rounding (float64: a few ulps; bfloat16: products rounded to bf16 once, 2^-8 relative)
    kw = dict(kw)
    shapes = [(2, 3, 4), (2, 5, 4), (2, 5, 3)]
    if kw.pop("broadcast_kv", False):
        shapes = [(2, 3, 4), (1, 5, 4), (1, 5, 3)]
    if kw.get("attn_mask") == "bool":
        kw["attn_mask"] = cn.tensor(RNG.random((3, 5)) > 0.3)
    fast = _sdpa_grads(False, getattr(cn, dtype), shapes, **dict(kw))
    graph = _sdpa_grads(True, getattr(cn, dtype), shapes, **dict(kw))
    tol = 8 * np.finfo(np.float64).eps if dtype == "float64" else 2.0**-7
    assert len(fast) == len(graph)
    for a, b in zip(fast, graph):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol * max(1.0, np.abs(b).max()))
