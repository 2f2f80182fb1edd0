"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU``, their one-step cells, and the cell functions they share.

Every cell is plain cupynet ops (``linear`` for the two gate matmuls, then ``sigmoid``/``tanh`` and
products), so autograd gives backward and double backward. A layer runs one direction of one layer as:

1. ``linear`` of the whole input sequence with ``weight_ih`` at once (one large matmul, as cuDNN does);
2. a loop over time steps, each one ``linear`` of the hidden state with ``weight_hh`` plus the gate math.

Padded input is handled as a packed batch whose ``batch_sizes`` are all ``B``, so padded and packed
(``nn.utils.rnn.PackedSequence``) input take the same path: at step ``t`` only the first
``batch_sizes[t]`` rows of the state advance; a row whose sequence has ended keeps its last state,
which is what ``h_n`` reports for it.

AMP: PyTorch's CUDA autocast lists put ``rnn_tanh_cell``, ``rnn_relu_cell``, ``lstm_cell`` and
``gru_cell`` (and cuDNN's whole-sequence RNN) in the lower-precision list: every floating input of a cell,
state included, runs in fp16/bf16. cupynet applies the CUDA lists on every device (see
``amp/policy.py``), so inside an autocast region each cell casts its state to the region's dtype (the
weights are cast, once per region, by ``linear``'s own ``lower`` policy) and returns it in that dtype.
"""

from __future__ import annotations

import math
import numbers
import warnings

from .. import creation, dtypes
from ..amp.autocast import get_autocast_dtype, is_autocast_enabled
from ..checks import check_bool, check_int, require_tensor
from ..ops import cat, index_select, relu, sigmoid, split, stack, tanh, transpose
from ..tensor import Tensor
from . import functional as F
from . import init
from .linear import new_parameter
from .module import Module
from .utils.rnn import PackedSequence

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell", "rnn_tanh_cell",
           "rnn_relu_cell", "lstm_cell", "gru_cell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _autocast_state(state):
    """Cast floating (non-float64) state tensors to the autocast dtype when a region is on (the cell's policy).

    Args:
        state: a tuple of Tensors (h,) or (h, c).
    """
    device = "cuda" if state[0].is_cuda else "cpu"
    if not is_autocast_enabled(device):
        return state
    target = get_autocast_dtype(device)
    return tuple(s.to(target) if s.dtype in dtypes.FLOATING and s.dtype != dtypes.float64 else s for s in state)


# One time step of each cell kind: ``gi`` is linear(x, w_ih, b_ih) of this step (computed ahead for the whole
# sequence by the layers), ``state`` the previous (h,) or (h, c); each returns the new state tuple.

def _tanh_step(gi, state, w_hh, b_hh, w_hr=None):
    return (tanh(gi + F.linear(state[0], w_hh, b_hh)),)


def _relu_step(gi, state, w_hh, b_hh, w_hr=None):
    return (relu(gi + F.linear(state[0], w_hh, b_hh)),)


def _lstm_step(gi, state, w_hh, b_hh, w_hr=None):
    h, c = state
    i, f, g, o = split(gi + F.linear(h, w_hh, b_hh), c.shape[-1], -1)
    c = sigmoid(f) * c + sigmoid(i) * tanh(g)
    h = sigmoid(o) * tanh(c)
    return (h if w_hr is None else F.linear(h, w_hr), c)


def _gru_step(gi, state, w_hh, b_hh, w_hr=None):
    h = state[0]
    i_r, i_z, i_n = split(gi, h.shape[-1], -1)
    h_r, h_z, h_n = split(F.linear(h, w_hh, b_hh), h.shape[-1], -1)
    r, z = sigmoid(i_r + h_r), sigmoid(i_z + h_z)
    # NOTE: b_hn stays inside r * (.), as in PyTorch (and cuDNN): n = tanh(W_in x + b_in + r * (W_hn h + b_hn))
    n = tanh(i_n + r * h_n)
    return ((1 - z) * n + z * h,)


_STEPS = {"RNN_TANH": _tanh_step, "RNN_RELU": _relu_step, "LSTM": _lstm_step, "GRU": _gru_step}


def _cell(mode, input, state, w_ih, w_hh, b_ih, b_hh):  # noqa: A002
    state = _autocast_state(state)
    return _STEPS[mode](F.linear(input, w_ih, b_ih), state, w_hh, b_hh)


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002 - PyTorch's names
    """One Elman step: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)``.

    Args:
        input: ``(B, input_size)``.
        hx: ``(B, hidden_size)``.
        w_ih: ``(hidden_size, input_size)``.
        w_hh: ``(hidden_size, hidden_size)``.
        b_ih: ``(hidden_size,)`` or None.
        b_hh: ``(hidden_size,)`` or None.
    """
    return _cell("RNN_TANH", input, (hx,), w_ih, w_hh, b_ih, b_hh)[0]


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002
    """One Elman step with ReLU: ``h' = relu(x W_ih^T + b_ih + h W_hh^T + b_hh)``.

    Args:
        input: ``(B, input_size)``.
        hx: ``(B, hidden_size)``.
        w_ih, w_hh, b_ih, b_hh: weights and biases, shaped as for ``rnn_tanh_cell``.
    """
    return _cell("RNN_RELU", input, (hx,), w_ih, w_hh, b_ih, b_hh)[0]


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002
    """One LSTM step; returns ``(h', c')``.

    gates = x W_ih^T + b_ih + h W_hh^T + b_hh, split into i, f, g, o (that order);
    c' = sigmoid(f) * c + sigmoid(i) * tanh(g);  h' = sigmoid(o) * tanh(c').

    Args:
        input: ``(B, input_size)``.
        hx: the pair ``(h, c)``, each ``(B, hidden_size)``.
        w_ih: ``(4 * hidden_size, input_size)``.
        w_hh: ``(4 * hidden_size, hidden_size)``.
        b_ih: ``(4 * hidden_size,)`` or None.
        b_hh: ``(4 * hidden_size,)`` or None.
    """
    return _cell("LSTM", input, tuple(hx), w_ih, w_hh, b_ih, b_hh)


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002
    """One GRU step: r, z = sigmoid(..), n = tanh(x W_in^T + b_in + r * (h W_hn^T + b_hn)), h' = (1-z) n + z h.

    Args:
        input: ``(B, input_size)``.
        hx: ``(B, hidden_size)``.
        w_ih: ``(3 * hidden_size, input_size)`` (rows: r, z, n).
        w_hh: ``(3 * hidden_size, hidden_size)``.
        b_ih: ``(3 * hidden_size,)`` or None.
        b_hh: ``(3 * hidden_size,)`` or None.
    """
    return _cell("GRU", input, (hx,), w_ih, w_hh, b_ih, b_hh)[0]


# ---------------------------------------------------------------------------------------------- arguments

def _check_dropout(dropout, num_layers: int) -> float:
    if isinstance(dropout, bool) or not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1:
        raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element "
                         "being zeroed")
    if dropout > 0 and num_layers == 1:
        warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                      f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                      stacklevel=3)
    return float(dropout)


def _reset_uniform(module: Module, hidden_size: int):
    """PyTorch's RNN init: every weight and bias ~ U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
    bound = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0.0
    for p in module.parameters():
        init.uniform_(p, -bound, bound)


# ---------------------------------------------------------------------------------------------- layers

class RNNBase(Module):
    """The shared multi-layer, optionally bidirectional recurrent layer (``RNN``, ``LSTM``, ``GRU``).

    Parameters per layer ``k`` and direction (suffix ``_reverse`` for the backward one), PyTorch's names:
    ``weight_ih_l{k}`` ``(G*hidden, in)``, ``weight_hh_l{k}`` ``(G*hidden, out)``, ``bias_ih_l{k}``,
    ``bias_hh_l{k}`` ``(G*hidden,)``, and for an LSTM with ``proj_size``, ``weight_hr_l{k}``
    ``(proj_size, hidden)``; G is 1 (RNN), 4 (LSTM) or 3 (GRU), ``out`` is ``proj_size or hidden_size``
    and ``in`` is ``input_size`` for layer 0, ``num_directions * out`` above.

    Args:
        mode: ``"RNN_TANH"``, ``"RNN_RELU"``, ``"LSTM"`` or ``"GRU"``.
        input_size: features of each input step.
        hidden_size: features of the hidden state.
        num_layers: stacked layers.
        bias: learn ``bias_ih``/``bias_hh``.
        batch_first: input and output are ``(B, T, *)`` instead of ``(T, B, *)`` (states are not affected).
        dropout: dropout probability on the outputs of every layer but the last (training only).
        bidirectional: run a second, reversed direction and concatenate its outputs.
        proj_size: LSTM only: project ``h`` to this size (0: no projection).
        device: where the parameters live.
        dtype: their floating dtype (default float32).
    """

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + str(mode))
        self.mode = mode
        owner = type(self).__name__
        self.bias, self.batch_first = check_bool(owner, "bias", bias), check_bool(owner, "batch_first", batch_first)
        self.bidirectional = check_bool(owner, "bidirectional", bidirectional)
        self.input_size = check_int(owner, "input_size", input_size, minimum=1)
        self.hidden_size = check_int(owner, "hidden_size", hidden_size, minimum=1)
        self.num_layers = check_int(owner, "num_layers", num_layers, minimum=1)
        self.dropout = _check_dropout(dropout, num_layers)
        self.proj_size = self._check_proj_size(proj_size)
        self._flat_weights_names = self._register_weights(device, dtype)
        self.reset_parameters()

    def _check_proj_size(self, proj_size) -> int:
        if isinstance(proj_size, bool) or not isinstance(proj_size, int) or proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size and self.mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if proj_size >= self.hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        return proj_size

    @property
    def _num_directions(self) -> int:
        return 2 if self.bidirectional else 1

    @property
    def _out_size(self) -> int:
        return self.proj_size or self.hidden_size

    def _register_weights(self, device, dtype) -> list:
        gate = _GATES[self.mode] * self.hidden_size
        names = []
        for layer in range(self.num_layers):
            layer_in = self.input_size if layer == 0 else self._out_size * self._num_directions
            for suffix in ("", "_reverse")[:self._num_directions]:
                shapes = {"weight_ih": (gate, layer_in), "weight_hh": (gate, self._out_size)}
                if self.bias:
                    shapes.update(bias_ih=(gate,), bias_hh=(gate,))
                if self.proj_size:
                    shapes["weight_hr"] = (self.proj_size, self.hidden_size)
                for kind, shape in shapes.items():
                    name = f"{kind}_l{layer}{suffix}"
                    setattr(self, name, new_parameter(shape, device, dtype))
                    names.append(name)
        return names

    def reset_parameters(self):
        """Re-draw every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)) (PyTorch's init)."""
        _reset_uniform(self, self.hidden_size)

    def flatten_parameters(self):
        """A no-op: PyTorch packs the weights into one cuDNN buffer here; cupynet uses them as they are."""

    @property
    def _flat_weights(self) -> list:
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list:
        """The parameters grouped per layer and direction: ``[[w_ih, w_hh, b_ih, b_hh(, w_hr)], ...]``."""
        weights = self._flat_weights
        per = len(weights) // (self.num_layers * self._num_directions)
        return [weights[i:i + per] for i in range(0, len(weights), per)]

    def _params(self, layer: int, reverse: bool):
        suffix = f"_l{layer}" + ("_reverse" if reverse else "")
        get = (lambda kind: getattr(self, kind + suffix, None))
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh"), get("weight_hr")

    # ------------------------------------------------------------------------------------------ forward

    def forward(self, input, hx=None):  # noqa: A002
        """Run the layer over a sequence; returns ``(output, h_n)`` (``(output, (h_n, c_n))`` for an LSTM).

        Args:
            input: ``(T, B, input_size)`` (``(B, T, input_size)`` with ``batch_first``), ``(T, input_size)``
                unbatched, or a ``PackedSequence`` (then ``output`` is one too).
            hx: the initial state ``h_0`` ``(num_layers * num_directions, B, out)`` (2-D when unbatched),
                ``(h_0, c_0)`` for an LSTM (``c_0`` has ``hidden_size`` features); zeros when None.
        """
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        batched = self._check_input_dims(input, hx)
        x = input if batched else input.unsqueeze(1)
        x = transpose(x, 0, 1) if batched and self.batch_first else x
        self._check_input(x, 3)
        steps, batch = x.shape[0], x.shape[1]
        state = self._initial_state(x, batch, hx if batched or hx is None else self._map_state(hx, "unsqueeze"))
        data, state = self._run(x.reshape(steps * batch, x.shape[2]), [batch] * steps, state)
        output = data.reshape(steps, batch, data.shape[-1])
        output = transpose(output, 0, 1) if batched and self.batch_first else output
        if not batched:
            output, state = output.squeeze(1), tuple(s.squeeze(1) for s in state)
        return output, self._pack_state(state)

    def _forward_packed(self, packed: PackedSequence, hx):
        data, batch_sizes, sorted_indices, unsorted_indices = packed
        self._check_input(data, 2)
        sizes = [int(n) for n in batch_sizes.array.tolist()]
        if hx is not None:
            self._check_state_dims(hx, 3, "batched 3-D")
        if hx is not None and sorted_indices is not None:
            hx = self._map_state(hx, lambda s: index_select(s, 1, sorted_indices.to(s.device)))
        state = self._initial_state(data, sizes[0] if sizes else 0, hx)
        output, state = self._run(data, sizes, state)
        if unsorted_indices is not None:
            state = tuple(index_select(s, 1, unsorted_indices.to(s.device)) for s in state)
        return PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices), self._pack_state(state)

    def _map_state(self, hx, fn):
        fn = (lambda s: s.unsqueeze(1)) if fn == "unsqueeze" else fn
        return tuple(fn(s) for s in hx) if self.mode == "LSTM" else fn(hx)

    def _pack_state(self, state):
        return (state[0], state[1]) if self.mode == "LSTM" else state[0]

    def _state_list(self, hx) -> list:
        if self.mode != "LSTM":
            return [hx]
        if not isinstance(hx, (tuple, list)) or len(hx) != 2:
            raise TypeError(f"{type(self).__name__}: hx must be a tuple (h_0, c_0), got {type(hx).__name__}")
        return list(hx)

    def _check_state_dims(self, hx, ndim: int, kind: str):
        states = self._state_list(hx)
        for s in states:
            if not isinstance(s, Tensor):
                raise TypeError(f"{type(self).__name__}: the initial state must be Tensors, got {type(s).__name__}")
        if any(s.ndim != ndim for s in states):
            got = ", ".join(f"{s.ndim}-D" for s in states)
            raise RuntimeError(f"For {kind} input, hx should also be {ndim}-D but got "
                               + (f"({got}) tensors" if len(states) == 2 else f"{got} tensor"))

    def _check_input_dims(self, input, hx) -> bool:  # noqa: A002
        if not isinstance(input, Tensor):
            raise TypeError(f"{type(self).__name__}: expected a Tensor or a PackedSequence as input, got "
                            f"{type(input).__name__}")
        if input.ndim not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.ndim}D instead")
        batched = input.ndim == 3
        if hx is not None:
            self._check_state_dims(hx, 3 if batched else 2, "batched 3-D" if batched else "unbatched 2-D")
        return batched

    def _check_input(self, x: Tensor, ndim: int):
        weight = self.weight_ih_l0
        if x.dtype != weight.dtype and not is_autocast_enabled("cuda" if x.is_cuda else "cpu"):
            raise ValueError(f"RNN input dtype ({x.dtype}) does not match weight dtype ({weight.dtype}). Convert "
                             f"input: input.to({weight.dtype}), or convert model: model.to({x.dtype})")
        if x.ndim != ndim:
            raise RuntimeError(f"input must have {ndim} dimensions, got {x.ndim}")
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {x.shape[-1]}")

    def _initial_state(self, x: Tensor, batch: int, hx) -> tuple:
        layers = self.num_layers * self._num_directions
        sizes = [self._out_size] + ([self.hidden_size] if self.mode == "LSTM" else [])
        if hx is None:
            return tuple(creation.zeros(layers, batch, n, dtype=x.dtype, device=x.device) for n in sizes)
        states = self._state_list(hx)
        for k, (s, n) in enumerate(zip(states, sizes)):
            expected = (layers, batch, n)
            if tuple(s.shape) != expected:
                what = f"hidden[{k}] size" if self.mode == "LSTM" else "hidden size"
                raise RuntimeError(f"Expected {what} {expected}, got {list(s.shape)}")
        return tuple(states)

    def _run(self, data: Tensor, batch_sizes: list, state: tuple):
        """All layers and directions over time-major ``data`` ``(sum(batch_sizes), in)``; returns (output, states)."""
        finals = []
        for layer in range(self.num_layers):
            if layer and self.dropout and self.training:
                data = F.dropout(data, self.dropout, True)
            outputs = []
            for direction in range(self._num_directions):
                k = layer * self._num_directions + direction
                out, last = self._run_direction(data, batch_sizes, tuple(s[k] for s in state), layer, direction == 1)
                outputs.append(out)
                finals.append(last)
            data = outputs[0] if len(outputs) == 1 else cat(outputs, -1)
        return data, tuple(stack([f[i] for f in finals]) for i in range(len(state)))

    def _run_direction(self, data, batch_sizes, state, layer: int, reverse: bool):
        w_ih, w_hh, b_ih, b_hh, w_hr = self._params(layer, reverse)
        step = _STEPS[self.mode]
        state = _autocast_state(state)
        gates = F.linear(data, w_ih, b_ih)
        pieces = split(gates, batch_sizes, 0) if len(batch_sizes) > 1 else (gates,)
        run = _run_backward if reverse else _run_forward
        outputs, last = run(pieces, batch_sizes, state, lambda gi, s: step(gi, s, w_hh, b_hh, w_hr))
        return (outputs[0] if len(outputs) == 1 else cat(outputs)), last

    def extra_repr(self) -> str:
        """``input_size, hidden_size`` and the options that differ from their defaults."""
        text = f"{self.input_size}, {self.hidden_size}"
        for name, default in (("proj_size", 0), ("num_layers", 1), ("bias", True), ("batch_first", False),
                              ("dropout", 0.0), ("bidirectional", False)):
            if getattr(self, name) != default:
                text += f", {name}={getattr(self, name)}"
        return text


def _run_forward(pieces, batch_sizes, state, step):
    """Steps 0..T-1; rows whose sequence ended (batch size shrank) leave the state with their last value."""
    outputs, ended = [], []
    for gi, n in zip(pieces, batch_sizes):
        if n < state[0].shape[0]:
            ended.append(tuple(s[n:] for s in state))
            state = tuple(s[:n] for s in state)
        state = step(gi, state)
        outputs.append(state[0])
    ended.append(state)
    # NOTE: ended holds row blocks from the highest rows down; reversed, they are rows 0..B-1 again
    last = tuple(cat([e[i] for e in reversed(ended)]) if len(ended) > 1 else ended[0][i] for i in range(len(state)))
    return outputs, last


def _run_backward(pieces, batch_sizes, state, step):
    """Steps T-1..0; a sequence joins (from its initial state) at its own last step."""
    initial, outputs = state, [None] * len(pieces)
    state = tuple(s[:batch_sizes[-1]] for s in initial) if batch_sizes else initial
    for t in reversed(range(len(pieces))):
        n = batch_sizes[t]
        if n > state[0].shape[0]:
            state = tuple(cat([s, s0[s.shape[0]:n]]) for s, s0 in zip(state, initial))
        state = step(pieces[t], state)
        outputs[t] = state[0]
    return outputs, state


class RNN(RNNBase):
    """Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or ReLU), stacked and optionally
    bidirectional, PyTorch's parameters and init (see ``RNNBase``).

    Args:
        input_size: features of each input step.
        hidden_size: features of the hidden state.
        num_layers: stacked layers.
        nonlinearity: ``"tanh"`` or ``"relu"``.
        bias: learn the biases.
        batch_first: ``(B, T, *)`` input and output.
        dropout: dropout between layers (training only).
        bidirectional: add a reversed direction.
        device: where the parameters live.
        dtype: their floating dtype.
    """

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size,
                         num_layers, bias, batch_first, dropout, bidirectional, 0, device, dtype)
        self.nonlinearity = nonlinearity

    def extra_repr(self) -> str:
        """As ``RNNBase``, plus a non-default nonlinearity."""
        text = super().extra_repr()
        return text + (", nonlinearity='relu'" if self.nonlinearity == "relu" else "")


class LSTM(RNNBase):
    """Long short-term memory: gates i, f, g, o; ``c_t = f c_{t-1} + i g``, ``h_t = o tanh(c_t)`` (optionally
    projected by ``weight_hr``); returns ``(output, (h_n, c_n))``.

    Args:
        input_size: features of each input step.
        hidden_size: features of the cell state.
        num_layers: stacked layers.
        bias: learn ``bias_ih``/``bias_hh`` (4 * hidden_size each: gates i, f, g, o).
        batch_first: ``(B, T, *)`` input and output.
        dropout: dropout between layers (training only).
        bidirectional: add a reversed direction.
        proj_size: project ``h`` to this many features (0: none).
        device: where the parameters live.
        dtype: their floating dtype.
    """

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device, dtype)


class GRU(RNNBase):
    """Gated recurrent unit: gates r, z, n; ``h_t = (1 - z) n + z h_{t-1}``.

    Args:
        input_size: features of each input step.
        hidden_size: features of the hidden state.
        num_layers: stacked layers.
        bias: learn ``bias_ih``/``bias_hh`` (3 * hidden_size each: gates r, z, n).
        batch_first: ``(B, T, *)`` input and output.
        dropout: dropout between layers (training only).
        bidirectional: add a reversed direction.
        device: where the parameters live.
        dtype: their floating dtype.
    """

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, 0,
                         device, dtype)


# ---------------------------------------------------------------------------------------------- cells

class RNNCellBase(Module):
    """One step of a recurrent cell: ``weight_ih`` ``(G*hidden, input_size)``, ``weight_hh`` ``(G*hidden, hidden)``,
    ``bias_ih``/``bias_hh`` ``(G*hidden,)``; PyTorch's names and init.

    Subclasses name their cell in ``_MODE`` (``"RNN_TANH"``, ``"RNN_RELU"``, ``"LSTM"`` or ``"GRU"``).

    Args:
        input_size: features of the input.
        hidden_size: features of the state.
        bias: learn the biases.
        device: where the parameters live.
        dtype: their floating dtype.
    """

    _MODE = "RNN_TANH"

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__()
        mode = self.mode = self._MODE
        self.input_size = check_int(type(self).__name__, "input_size", input_size, minimum=1)
        self.hidden_size = check_int(type(self).__name__, "hidden_size", hidden_size, minimum=1)
        self.bias = check_bool(type(self).__name__, "bias", bias)
        gate = _GATES[mode] * hidden_size
        self.weight_ih = new_parameter((gate, input_size), device, dtype)
        self.weight_hh = new_parameter((gate, hidden_size), device, dtype)
        for name in ("bias_ih", "bias_hh"):
            self.register_parameter(name, new_parameter((gate,), device, dtype) if bias else None)
        self.reset_parameters()

    def reset_parameters(self):
        """Re-draw every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)) (PyTorch's init)."""
        _reset_uniform(self, self.hidden_size)

    def _checked(self, input, hx):  # noqa: A002
        """Validate ``input``/``hx`` as PyTorch does; return (input, states, batched) with a batch dimension."""
        name = type(self).__name__
        require_tensor(name, input, "input")
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        batched = input.ndim == 2
        states = self._state_tuple(hx, input)
        for k, s in enumerate(states):
            if s.ndim not in (1, 2):
                what = f"hx[{k}]" if self.mode == "LSTM" else "hidden"
                raise ValueError(f"{name}: Expected {what} to be 1D or 2D, got {s.ndim}D instead")
            if s.ndim != input.ndim:
                raise RuntimeError(f"{name}: a {input.ndim}-D input needs a {input.ndim}-D hidden state, got "
                                   f"{s.ndim}-D")
        if not batched:
            input, states = input.unsqueeze(0), tuple(s.unsqueeze(0) for s in states)
        if input.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected {self.input_size}")
        for k, s in enumerate(states):
            if s.shape[0] != input.shape[0]:
                raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden{k} batch size "
                                   f"{s.shape[0]}")
            if s.shape[1] != self.hidden_size:
                raise RuntimeError(f"hidden{k} has inconsistent hidden_size: got {s.shape[1]}, expected "
                                   f"{self.hidden_size}")
        return input, states, batched

    def _state_tuple(self, hx, input) -> tuple:  # noqa: A002
        count = 2 if self.mode == "LSTM" else 1
        if hx is None:
            shape = (input.shape[0], self.hidden_size) if input.ndim == 2 else (self.hidden_size,)
            return tuple(creation.zeros(*shape, dtype=input.dtype, device=input.device) for _ in range(count))
        states = tuple(hx) if count == 2 and isinstance(hx, (tuple, list)) else (hx,)
        if len(states) != count or not all(isinstance(s, Tensor) for s in states):
            raise TypeError(f"{type(self).__name__}: hx must be " + ("a tuple (h, c) of Tensors" if count == 2
                                                                     else "a Tensor") + f", got {hx!r}")
        return states

    def forward(self, input, hx=None):  # noqa: A002
        """One step; returns ``h'`` (``(h', c')`` for an LSTMCell).

        Args:
            input: ``(B, input_size)`` or ``(input_size,)`` unbatched.
            hx: the state ``(B, hidden_size)`` (``(h, c)`` for an LSTMCell); zeros when None.
        """
        x, states, batched = self._checked(input, hx)
        out = _cell(self.mode, x, states, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        out = out if batched else tuple(s.squeeze(0) for s in out)
        return (out[0], out[1]) if self.mode == "LSTM" else out[0]

    def extra_repr(self) -> str:
        """``input_size, hidden_size`` (and ``bias=False``)."""
        return f"{self.input_size}, {self.hidden_size}" + ("" if self.bias else ", bias=False")


class RNNCell(RNNCellBase):
    """One Elman step, ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or ReLU).

    Args:
        input_size: features of the input.
        hidden_size: features of the state.
        bias: learn the biases.
        nonlinearity: ``"tanh"`` or ``"relu"``.
        device: where the parameters live.
        dtype: their floating dtype.
    """

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        self._MODE = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"
        super().__init__(input_size, hidden_size, bias, device, dtype)
        self.nonlinearity = nonlinearity


class LSTMCell(RNNCellBase):
    """One LSTM step (see ``lstm_cell``); returns ``(h', c')``.

    Args:
        input_size: features of the input.
        hidden_size: features of ``h`` and of the cell state ``c``.
        bias: learn ``bias_ih`` and ``bias_hh`` (4 * hidden_size each).
        device: where the parameters live.
        dtype: their floating dtype.
    """

    _MODE = "LSTM"


class GRUCell(RNNCellBase):
    """One GRU step (see ``gru_cell``).

    Args:
        input_size: features of the input.
        hidden_size: features of the state.
        bias: learn ``bias_ih`` and ``bias_hh`` (3 * hidden_size each).
        device: where the parameters live.
        dtype: their floating dtype.
    """

    _MODE = "GRU"
