"""nn.RNN / LSTM / GRU and their cells against torch: state_dict layout, outputs, final states, every gradient.

Tolerances come from one error bound. One step computes gate pre-activations as dot products of
K = input_size + hidden_size + 2 terms (x W_ih^T, h W_hh^T, two biases); with |x|, |h| <= 1 and PyTorch's
init |w| <= 1/sqrt(H), such a dot product is off by at most gamma_K * S <= K u S, S = (I + H + 2) / sqrt(H)
(u the unit roundoff). The activations are 1-Lipschitz and bounded, so each step adds an error of that
size; over T steps the errors add up: |out - exact| <= T K u S. (This assumes the recurrence does not
amplify errors - saturating activations and forget gates < 1 make the trajectories here contractive; a
worst case over any weights would be geometric in T.) Gradients run the chain back once more: relative
error <= 2 T K u S of the largest gradient entry. float64 runs use u = 2^-53, float32 runs u = 2^-24.
"""

import math

import numpy as np
import pytest

import cupynet as cn
from cupynet import nn
from cupynet.nn.utils import rnn as R

torch = pytest.importorskip("torch")
TR = torch.nn.utils.rnn
UNIT_ROUNDOFF = {"float64": 2.0 ** -53, "float32": 2.0 ** -24}
MODES = [("RNN", {}), ("RNN", {"nonlinearity": "relu"}), ("LSTM", {}), ("GRU", {}), ("LSTM", {"proj_size": 3})]
CONFIGS = [{}, {"num_layers": 2, "bidirectional": True}, {"num_layers": 3, "batch_first": True, "bias": False}]


def bound(steps, in_size, hidden, dtype, layers=1):
    """T K u S from the module docstring; a stacked layer adds its own steps on top of its input's error."""
    k = in_size + hidden + 2
    s = (in_size + hidden + 2) / math.sqrt(hidden)
    return steps * layers * k * UNIT_ROUNDOFF[dtype] * s


def pair(name, dtype="float64", **kwargs):
    """A torch module (float64 oracle) and a cupynet one of ``dtype`` loaded with the same state_dict."""
    tm = getattr(torch.nn, name)(**kwargs).double()
    cm = getattr(nn, name)(**kwargs, dtype=dtype)
    cm.load_state_dict({k: cn.tensor(v.detach().numpy(), dtype=dtype) for k, v in tm.state_dict().items()})
    return tm, cm


def _flat(states):
    """The Tensors of a (nested) tuple of outputs, in order."""
    if not isinstance(states, tuple):
        return [states]
    return [t for s in states for t in _flat(s)]


def _close(got, want, atol, what):
    got = got.detach().numpy() if isinstance(got, cn.Tensor) else got
    np.testing.assert_allclose(np.asarray(got, np.float64), want.detach().numpy(), atol=atol, rtol=0, err_msg=what)


def _uniform(seed, *shape):
    return np.random.default_rng(seed).uniform(-1, 1, shape)


def _h0(tm, batch):
    layers = tm.num_layers * (2 if tm.bidirectional else 1)
    shapes = [(layers, batch, tm.proj_size or tm.hidden_size)]
    if isinstance(tm, torch.nn.LSTM):
        shapes.append((layers, batch, tm.hidden_size))
    return [_uniform(10 + i, *s) for i, s in enumerate(shapes)]


def _run_both(tm, cm, x, h0, dtype, kind):
    """Forward both with x and h0 requiring grad; return (cupynet outs, torch outs, cupynet leaves, torch leaves)."""
    tx = torch.tensor(x, requires_grad=True)
    cx = cn.tensor(x, dtype=dtype, requires_grad=True)
    th = [torch.tensor(h, requires_grad=True) for h in h0]
    ch = [cn.tensor(h, dtype=dtype, requires_grad=True) for h in h0]
    t_in, c_in = tx, cx
    if kind == "packed":
        lengths = [x.shape[0] - (b % x.shape[0]) for b in range(x.shape[1])]  # unsorted, with ties
        t_in = TR.pack_padded_sequence(tx, lengths, enforce_sorted=False)
        c_in = R.pack_padded_sequence(cx, lengths, enforce_sorted=False)
    t_hx = (th[0], th[1]) if len(th) == 2 else th[0]
    c_hx = (ch[0], ch[1]) if len(ch) == 2 else ch[0]
    t_out, t_state = tm(t_in, t_hx)
    c_out, c_state = cm(c_in, c_hx)
    if kind == "packed":
        t_out, c_out = t_out.data, c_out.data
    return [c_out] + _flat(c_state), [t_out] + _flat(t_state), [cx] + ch, [tx] + th


def _check_against_torch(tm, cm, x, h0, dtype, kind):
    steps = x.shape[0] if kind != "batch_first" else x.shape[1]
    tol = bound(steps, tm.input_size, tm.hidden_size, dtype, tm.num_layers)
    c_outs, t_outs, c_leaves, t_leaves = _run_both(tm, cm, x, h0, dtype, kind)
    for i, (c, t) in enumerate(zip(c_outs, t_outs)):
        assert tuple(c.shape) == tuple(t.shape)
        _close(c, t, tol, f"output {i}")
    cots = [np.random.default_rng(50 + i).standard_normal(tuple(t.shape)) for i, t in enumerate(t_outs)]
    sum((t * torch.tensor(v)).sum() for t, v in zip(t_outs, cots)).backward()
    sum((c * cn.tensor(v, dtype=dtype)).sum() for c, v in zip(c_outs, cots)).backward()
    named_t = dict(tm.named_parameters())
    pairs = [(f"param {n}", p.grad, named_t[n].grad) for n, p in cm.named_parameters()]
    pairs += [(f"leaf {i}", c.grad, t.grad) for i, (c, t) in enumerate(zip(c_leaves, t_leaves))]
    for what, cg, tg in pairs:
        _close(cg, tg, 2 * steps * tol * max(1.0, tg.abs().max().item()), f"gradient of {what}")


@pytest.mark.parametrize("name, extra", MODES)
@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("kind", ["padded", "packed", "unbatched"])
def test_layers_match_torch_float64(name, extra, config, kind):
    tm, cm = pair(name, input_size=4, hidden_size=5, **extra, **config)
    batch_first = config.get("batch_first", False) and kind == "padded"
    x = _uniform(0, 3, 6, 4) if batch_first else _uniform(0, 6, 3, 4)
    h0 = _h0(tm, 3)
    if kind == "unbatched":
        x, h0 = x[:, 0], [h[:, 0] for h in h0]
    _check_against_torch(tm, cm, x, h0, "float64", "batch_first" if batch_first else kind)


@pytest.mark.parametrize("name, extra", MODES)
@pytest.mark.parametrize("steps", [5, 40])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_layers_float32_within_derived_bound(name, extra, steps, bidirectional):
    tm, cm = pair(name, "float32", input_size=6, hidden_size=8, bidirectional=bidirectional, **extra)
    x = _uniform(1, steps, 4, 6).astype(np.float32).astype(np.float64)  # exactly representable in float32
    h0 = [h.astype(np.float32).astype(np.float64) for h in _h0(tm, 4)]
    _check_against_torch(tm, cm, x, h0, "float32", "padded")


def test_state_dict_names_shapes_and_init_match_torch():
    for name, extra in MODES:
        for config in CONFIGS:
            tm = getattr(torch.nn, name)(4, 5, **extra, **config)
            cm = getattr(nn, name)(4, 5, **extra, **config)
            assert [(k, tuple(v.shape)) for k, v in cm.state_dict().items()] == \
                   [(k, tuple(v.shape)) for k, v in tm.state_dict().items()]
    big = nn.LSTM(30, 400)
    values = np.concatenate([p.detach().numpy().ravel() for p in big.parameters()])
    edge = 1 / math.sqrt(400)
    assert np.abs(values).max() <= edge and np.abs(values).max() > 0.99 * edge
    # NOTE: U(-a, a) has standard deviation a / sqrt(3); 700k draws pin it to ~0.1%
    assert values.std() == pytest.approx(edge / math.sqrt(3), rel=0.01)


CELLS = [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}), ("LSTMCell", {}), ("GRUCell", {}),
         ("GRUCell", {"bias": False})]


@pytest.mark.parametrize("name, extra", CELLS)
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("with_state", [True, False])
def test_cells_match_torch(name, extra, batched, with_state):
    tm, cm = pair(name, input_size=4, hidden_size=5, **extra)
    shape = (3, 4) if batched else (4,)
    x = _uniform(2, *shape)
    hs = [_uniform(3 + i, *(shape[:-1] + (5,))) for i in range(2 if name == "LSTMCell" else 1)]
    tx, cx = torch.tensor(x, requires_grad=True), cn.tensor(x, requires_grad=True)
    th = [torch.tensor(h, requires_grad=True) for h in hs]
    ch = [cn.tensor(h, requires_grad=True) for h in hs]
    pack = (lambda hs_: (tuple(hs_) if len(hs_) == 2 else hs_[0]) if with_state else None)
    t_out, c_out = _flat(tm(tx, pack(th))), _flat(cm(cx, pack(ch)))
    tol = bound(1, 4, 5, "float64")
    for c, t in zip(c_out, t_out):
        _close(c, t, tol, "cell output")
    sum(t.sum() * (i + 1) for i, t in enumerate(t_out)).backward()
    sum(c.sum() * (i + 1) for i, c in enumerate(c_out)).backward()
    named_t = dict(tm.named_parameters())
    for n, p in cm.named_parameters():
        _close(p.grad, named_t[n].grad, 2 * tol, f"gradient of {n}")
    _close(cx.grad, tx.grad, 2 * tol, "gradient of input")
    if with_state:
        for c, t in zip(ch, th):
            _close(c.grad, t.grad, 2 * tol, "gradient of hx")


@pytest.mark.parametrize("fn, gates, pair_state", [("rnn_tanh_cell", 1, False), ("rnn_relu_cell", 1, False),
                                                   ("lstm_cell", 4, True), ("gru_cell", 3, False)])
def test_cell_functions_first_and_second_derivatives(fn, gates, pair_state):
    from op_harness import check_op  # noqa: PLC0415 - the shared harness, as the other op tests use it
    cfn, tfn = getattr(cn.nn.rnn, fn), getattr(torch, fn)
    shapes = [(2, 4), (2, 3), (gates * 3, 4), (gates * 3, 3), (gates * 3,), (gates * 3,)]
    if pair_state:
        check_op(shapes + [(2, 3)], lambda x, h, wi, wh, bi, bh, c: cfn(x, (h, c), wi, wh, bi, bh),
                 torch_fn=lambda x, h, wi, wh, bi, bh, c: tfn(x, (h, c), wi, wh, bi, bh), dtypes=("float32",))
    else:
        check_op(shapes, cfn, torch_fn=tfn, dtypes=("float32",), low=0.1 if "relu" in fn else -2.0)


def test_dropout_between_layers_only_in_training():
    x = cn.tensor(_uniform(4, 5, 2, 3), dtype=cn.float32)
    model = nn.GRU(3, 4, num_layers=2, dropout=0.5)
    model.eval()
    reference = model(x)[0].detach().numpy()
    plain = nn.GRU(3, 4, num_layers=2)
    plain.load_state_dict(model.state_dict())
    np.testing.assert_array_equal(plain(x)[0].detach().numpy(), reference)
    model.train()
    assert not np.allclose(model(x)[0].detach().numpy(), reference)
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        single = nn.LSTM(3, 4, dropout=0.3)
    single.train()
    single_ref = nn.LSTM(3, 4)
    single_ref.load_state_dict(single.state_dict())
    np.testing.assert_array_equal(single(x)[0].detach().numpy(), single_ref(x)[0].detach().numpy())


def test_packed_output_round_trips_to_padded_like_torch():
    tm, cm = pair("LSTM", input_size=3, hidden_size=4, batch_first=True, bidirectional=True)
    x = _uniform(5, 3, 6, 3)
    lengths = [2, 6, 4]
    t_out, _ = tm(TR.pack_padded_sequence(torch.tensor(x), lengths, batch_first=True, enforce_sorted=False))
    c_out, _ = cm(R.pack_padded_sequence(cn.tensor(x), lengths, batch_first=True, enforce_sorted=False))
    assert isinstance(c_out, R.PackedSequence)
    t_pad, t_len = TR.pad_packed_sequence(t_out, batch_first=True, total_length=7)
    c_pad, c_len = R.pad_packed_sequence(c_out, batch_first=True, total_length=7)
    _close(c_pad, t_pad, bound(6, 3, 4, "float64"), "padded output")
    assert c_len.numpy().tolist() == t_len.tolist()


def test_autocast_matches_torch_cpu_bfloat16():
    """Under autocast the cells run in bfloat16 (torch's lower list): dtypes and values as torch's CPU autocast.

    NOTE: the tolerance is the harness's bfloat16 forward tolerance (u_bf16 = 2^-8 per rounding, a few
    roundings per step, T = 4 steps); cupynet runs every cell in bfloat16 as torch's CUDA lists say
    (docs/recurrent.md). The oracle runs without oneDNN (``torch_native_cpu``): oneDNN's bfloat16 LSTM exists
    only on AVX-512 CPUs; without oneDNN torch's CPU autocast computes LSTM, GRU and their cells in fp32 (RNN
    and RNNCell in bfloat16), the same on every CPU. An fp32 reference is more exact than a second bfloat16
    computation, so the bfloat16 tolerance, sized for two bfloat16 results, bounds cupynet's own roundings
    (measured: at most 2% of it).
    """
    from op_harness import TOLERANCES, torch_native_cpu  # noqa: PLC0415
    (atol, rtol), _ = TOLERANCES["bfloat16"]
    for name in ("RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"):
        tm = getattr(torch.nn, name)(6, 8)
        cm = getattr(nn, name)(6, 8)
        cm.load_state_dict({k: cn.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
        x = _uniform(6, *((3, 6) if "Cell" in name else (4, 3, 6))).astype(np.float32)
        with torch.autocast("cpu", dtype=torch.bfloat16), torch_native_cpu():
            t_out = _flat(tm(torch.tensor(x)))
        with cn.amp.autocast("cpu", dtype=cn.bfloat16):
            c_out = _flat(cm(cn.tensor(x)))
        for c, t in zip(c_out, t_out):
            assert c.dtype == cn.bfloat16, name
            np.testing.assert_allclose(c.float().detach().numpy(), t.float().detach().numpy(), atol=atol, rtol=rtol)
        c_out[0].float().sum().backward()
        assert all(p.grad is not None and p.grad.dtype == cn.float32 for p in cm.parameters())


def test_flatten_parameters_is_a_no_op_and_all_weights_groups_by_layer():
    model = nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2)
    before = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    model.flatten_parameters()
    assert all(np.array_equal(before[k], v.detach().numpy()) for k, v in model.state_dict().items())
    assert [len(w) for w in model.all_weights] == [5, 5, 5, 5]
    assert model.all_weights[1][0] is model.weight_ih_l0_reverse
    assert repr(model) == "LSTM(3, 4, proj_size=2, num_layers=2, bidirectional=True)"


LAYER_ERRORS = [
    (lambda m: m(cn.zeros(5, 2, 2)), RuntimeError, "input.size(-1) must be equal to input_size. Expected 3, got 2"),
    (lambda m: m(cn.zeros(5, 2, 3, 1)), ValueError, "LSTM: Expected input to be 2D or 3D, got 4D instead"),
    (lambda m: m(cn.zeros(5, 2, 3), (cn.zeros(1, 3, 4), cn.zeros(1, 3, 4))), RuntimeError,
     "Expected hidden[0] size (1, 2, 4), got [1, 3, 4]"),
    (lambda m: m(cn.zeros(5, 2, 3), (cn.zeros(1, 2, 4), cn.zeros(1, 2, 5))), RuntimeError,
     "Expected hidden[1] size (1, 2, 4), got [1, 2, 5]"),
    (lambda m: m(cn.zeros(5, 2, 3), (cn.zeros(2, 4), cn.zeros(2, 4))), RuntimeError,
     "For batched 3-D input, hx should also be 3-D but got (2-D, 2-D) tensors"),
    (lambda m: m(cn.zeros(5, 3), (cn.zeros(1, 1, 4), cn.zeros(1, 1, 4))), RuntimeError,
     "For unbatched 2-D input, hx should also be 2-D"),
    (lambda m: m(cn.zeros(5, 2, 3, dtype=cn.float64)), ValueError,
     "RNN input dtype (float64) does not match weight dtype (float32)"),
    (lambda m: m(cn.zeros(5, 2, 3), cn.zeros(1, 2, 4)), TypeError, "hx must be a tuple (h_0, c_0)"),
]


@pytest.mark.parametrize("call, error, message", LAYER_ERRORS)
def test_layer_bad_inputs_raise_torch_errors_and_leave_the_layer_untouched(call, error, message):
    model = nn.LSTM(3, 4)
    before = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    with pytest.raises(error, match=_literal(message)):
        call(model)
    assert all(np.array_equal(before[k], v.detach().numpy()) for k, v in model.state_dict().items())


def _literal(text):
    import re  # noqa: PLC0415
    return re.escape(text)


def test_gru_hidden_size_error_and_constructor_checks():
    with pytest.raises(RuntimeError, match=_literal("Expected hidden size (1, 2, 4), got [1, 3, 4]")):
        nn.GRU(3, 4)(cn.zeros(5, 2, 3), cn.zeros(1, 3, 4))
    with pytest.raises(RuntimeError, match="input must have 2 dimensions, got 3"):
        nn.GRU(3, 4)(R.PackedSequence(cn.zeros(5, 2, 3), cn.tensor([3, 2], dtype=cn.int64)))
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="only supported for LSTM"):
        nn.RNNBase("GRU", 3, 4, proj_size=2)
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        nn.GRU(3, 4, dropout=1.5)
    with pytest.raises(TypeError, match="RNN: hidden_size must be an int, got 4.0"):
        nn.RNN(3, 4.0)
    with pytest.raises(ValueError, match="RNN: hidden_size must be at least 1, got 0"):
        nn.RNN(3, 0)
    with pytest.raises(ValueError, match="Unknown nonlinearity 'gelu'"):
        nn.RNN(3, 4, nonlinearity="gelu")


def _hc(h_shape, c_shape):
    return cn.zeros(*h_shape), cn.zeros(*c_shape)


CELL_ERRORS = [
    (lambda c: c(cn.zeros(2, 5)), "input has inconsistent input_size: got 5 expected 3"),
    (lambda c: c(cn.zeros(2, 3), _hc((3, 4), (2, 4))), "Input batch size 2 doesn't match hidden0 batch size 3"),
    (lambda c: c(cn.zeros(2, 3), _hc((2, 4), (2, 5))), "hidden1 has inconsistent hidden_size: got 5, expected 4"),
    (lambda c: c(cn.zeros(2, 2, 3)), "LSTMCell: Expected input to be 1D or 2D, got 3D instead"),
    (lambda c: c(cn.zeros(2, 3), _hc((1, 2, 4), (2, 4))), "LSTMCell: Expected hx[0] to be 1D or 2D, got 3D"),
    (lambda c: c(cn.zeros(3), _hc((2, 4), (2, 4))), "a 1-D input needs a 1-D hidden state, got 2-D"),
]


@pytest.mark.parametrize("call, message", CELL_ERRORS)
def test_cell_bad_inputs_raise_torch_errors(call, message):
    with pytest.raises((RuntimeError, ValueError), match=_literal(message)):
        call(nn.LSTMCell(3, 4))
