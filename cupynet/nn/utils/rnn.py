"""``cupynet.nn.utils.rnn``: padded and packed batches of variable-length sequences (PyTorch's names).

A *padded* batch is one Tensor ``(T, B, *)`` (or ``(B, T, *)`` with ``batch_first``) where sequence ``b``
fills its first ``lengths[b]`` time steps. A *packed* batch (``PackedSequence``) keeps only the real steps,
time-major: ``data`` holds, for each time step ``t``, the rows of the ``batch_sizes[t]`` sequences still
running at ``t`` (sequences sorted by decreasing length), so a recurrent layer can run step ``t`` on the
first ``batch_sizes[t]`` rows of its state and never computes on padding.

Every conversion here is one gather of rows (``index_select``) built from a host-side index table, so the
gradient flows back to the padded or packed values; ``batch_sizes`` and the index permutations are int64
CPU Tensors, as in PyTorch.
"""

from __future__ import annotations

import numbers
from collections import namedtuple

import numpy

from ... import backend, creation, dtypes
from ...ops import cat, index_select, reshape, transpose
from ...tensor import Tensor

__all__ = ["PackedSequence", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence", "unpad_sequence",
           "pack_sequence", "unpack_sequence", "invert_permutation"]


def _int64_cpu(values) -> Tensor:
    return creation.tensor(numpy.asarray(values, dtype=numpy.int64), dtype=dtypes.int64, device="cpu")


def _host_ints(t):
    return None if t is None else numpy.asarray(backend.to_numpy(t.array), dtype=numpy.int64)


def _on(values: numpy.ndarray, like: Tensor) -> Tensor:
    """An int64 index Tensor on ``like``'s device (index tables are built on the host)."""
    return creation.tensor(values, dtype=dtypes.int64, device=like.device)


def invert_permutation(permutation):
    """The inverse of a permutation (``out[permutation[i]] = i``), or None for None.

    Args:
        permutation: a 1-D int64 Tensor, or None.
    """
    if permutation is None:
        return None
    perm = _host_ints(permutation)
    inverse = numpy.empty_like(perm)
    inverse[perm] = numpy.arange(perm.size, dtype=numpy.int64)
    return _on(inverse, permutation)


_Fields = namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


def _cast(dtype):
    """The ``PackedSequence`` method that casts ``data`` to ``dtype`` (``float``, ``double``, ``half``)."""
    def cast(self):
        return self.to(dtype)
    cast.__doc__ = f"``data`` as {numpy.dtype(dtype).name}."
    return cast


class PackedSequence(_Fields):
    """A packed batch of variable-length sequences: what ``pack_padded_sequence`` returns and RNNs accept.

    Fields:
        data: ``(sum(lengths), *)``: the steps of all sequences, time-major (see the module docstring).
        batch_sizes: int64 CPU Tensor ``(T,)``: how many sequences run at each time step (non-increasing).
        sorted_indices: int64 Tensor (B,): ``sorted_indices[k]`` is the original batch index of the k-th
            longest sequence, or None when the batch was already sorted.
        unsorted_indices: its inverse permutation, or None.

    Args:
        data: see Fields.
        batch_sizes: see Fields.
        sorted_indices: see Fields.
        unsorted_indices: see Fields (computed from ``sorted_indices`` when None).
    """

    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if batch_sizes is None:
            if not isinstance(data, (tuple, list)) or len(data) != 2:
                raise TypeError("PackedSequence: give data and batch_sizes (or a (data, batch_sizes) pair)")
            data, batch_sizes = data
        if not isinstance(data, Tensor) or not isinstance(batch_sizes, Tensor):
            raise TypeError(f"PackedSequence: data and batch_sizes must be Tensors, got {type(data).__name__} "
                            f"and {type(batch_sizes).__name__}")
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def _with_data(self, data):
        move = (lambda t: None if t is None else t.to(data.device))
        return type(self)(data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices))

    def to(self, *args, **kwargs):
        """The same batch with ``data`` moved/cast by ``Tensor.to`` (the indices follow the device).

        Args:
            *args: as ``Tensor.to``.
            **kwargs: as ``Tensor.to``.
        """
        data = self.data.to(*args, **kwargs)
        return self if data is self.data else self._with_data(data)

    def cpu(self):
        """The batch on the CPU."""
        return self.to("cpu")

    def cuda(self, device=None):
        """The batch on a CUDA device.

        Args:
            device: the CUDA device (default: the current one).
        """
        return self._with_data(self.data.cuda(device))

    float = _cast(dtypes.float32)
    double = _cast(dtypes.float64)
    half = _cast(dtypes.float16)

    @property
    def is_cuda(self) -> bool:
        """Whether ``data`` lives on a CUDA device."""
        return self.data.is_cuda


def _lengths_array(lengths, batch: int) -> numpy.ndarray:
    """``lengths`` (a list or a CPU Tensor) as host int64, checked against PyTorch's rules."""
    if isinstance(lengths, Tensor):
        if lengths.is_cuda or lengths.ndim != 1:
            raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {lengths.ndim}D "
                               f"{lengths.device} {lengths.dtype} tensor")
        lengths = backend.to_numpy(lengths.array)
    array = numpy.asarray(lengths)
    if array.ndim != 1 or not (array.size == 0 or numpy.issubdtype(array.dtype, numpy.number)):
        raise RuntimeError(f"'lengths' argument should be a 1D list of ints or a CPU int64 tensor, got {lengths!r}")
    array = array.astype(numpy.int64)
    if array.size != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {array.size} "
                           f"(batch_size={batch})")
    if batch and array.min() <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    return array


_UNSORTED = ("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass "
             "`enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement "
             "if you do not need ONNX exportability.")


def _time_major(input, batch_first: bool):  # noqa: A002
    return transpose(input, 0, 1) if batch_first else input


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):  # noqa: A002
    """Pack a padded batch: keep the first ``lengths[b]`` steps of each sequence ``b``.

    Args:
        input: a Tensor ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``).
        lengths: the length of each sequence: a list of ints or a 1-D CPU Tensor.
        batch_first: whether ``input`` is batch-major.
        enforce_sorted: require ``lengths`` in decreasing order (else the batch is sorted here and the
            permutation kept in ``sorted_indices``).
    """
    if not isinstance(input, Tensor) or input.ndim < 2:
        raise TypeError(f"pack_padded_sequence: expected a Tensor with at least 2 dimensions, got "
                        f"{getattr(input, 'shape', type(input).__name__)}")
    padded = _time_major(input, batch_first)
    steps, batch = padded.shape[0], padded.shape[1]
    lengths = _lengths_array(lengths, batch)
    if enforce_sorted:
        if numpy.any(numpy.diff(lengths) > 0):
            raise RuntimeError(_UNSORTED)
        order = None
    else:
        # NOTE: stable, so equal lengths keep their batch order (what torch.sort gives on the CPU)
        order = numpy.argsort(-lengths, kind="stable")
        lengths = lengths[order]
    if batch and lengths[0] > steps:
        raise ValueError(f"pack_padded_sequence: a sequence of length {lengths[0]} does not fit the {steps} time "
                         "steps of the padded input")
    batch_sizes = (lengths[None, :] > numpy.arange(lengths[0] if batch else 0)[:, None]).sum(1)
    columns = numpy.arange(batch) if order is None else order
    rows = numpy.concatenate([t * batch + columns[:n] for t, n in enumerate(batch_sizes)] or [[]])
    flat = reshape(padded, (steps * batch,) + tuple(padded.shape[2:]))
    data = index_select(flat, 0, _on(rows.astype(numpy.int64), input))
    sorted_indices = None if order is None else _on(order, input)
    return PackedSequence(data, _int64_cpu(batch_sizes), sorted_indices)


def _check_packed(fn: str, sequence):
    if not isinstance(sequence, PackedSequence):
        raise TypeError(f"{fn}: expected a PackedSequence, got {type(sequence).__name__}")


def _padding_row(values: Tensor, padding_value) -> Tensor:
    if isinstance(padding_value, bool) or not isinstance(padding_value, numbers.Number):
        raise TypeError(f"padding_value must be a number, got {padding_value!r}")
    return creation.full((1,) + tuple(values.shape[1:]), padding_value, dtype=values.dtype, device=values.device)


def _gather_padded(values: Tensor, rows: numpy.ndarray, padding_value, shape) -> Tensor:
    """``values[rows]`` reshaped to ``shape``, where row index ``len(values)`` means a padding row."""
    source = cat([values, _padding_row(values, padding_value)])
    return reshape(index_select(source, 0, _on(rows.astype(numpy.int64), values)), shape)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Unpack a ``PackedSequence`` into a padded batch (the inverse of ``pack_padded_sequence``).

    Returns ``(padded, lengths)``: padded is ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``) in the
    original batch order, and lengths an int64 CPU Tensor.

    Args:
        sequence: a PackedSequence.
        batch_first: return a batch-major padded Tensor.
        padding_value: the value of the padding steps.
        total_length: pad to this many steps (at least the longest sequence), e.g. to match an input.
    """
    _check_packed("pad_packed_sequence", sequence)
    batch_sizes = _host_ints(sequence.batch_sizes)
    steps = batch_sizes.size
    if total_length is not None:
        if total_length < steps:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {steps}")
        steps = total_length
    batch = int(batch_sizes[0]) if batch_sizes.size else 0
    lengths = (batch_sizes[None, :] > numpy.arange(batch)[:, None]).sum(1)
    unsorted = _host_ints(sequence.unsorted_indices)
    order = numpy.arange(batch) if unsorted is None else unsorted
    offsets = numpy.concatenate([[0], numpy.cumsum(batch_sizes)])
    count = sequence.data.shape[0]
    # NOTE: rows[t, j]: where output step t of original sequence j sits in data (count = a padding row)
    rows = numpy.full((steps, batch), count, dtype=numpy.int64)
    for t, n in enumerate(batch_sizes):
        running = order < n
        rows[t, running] = offsets[t] + order[running]
    if batch_first:
        rows = rows.T
    padded = _gather_padded(sequence.data, rows.reshape(-1), padding_value,
                            rows.shape + tuple(sequence.data.shape[1:]))
    return padded, _int64_cpu(lengths[order])


def _check_sequences(fn: str, sequences) -> list:
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0))
    try:
        sequences = list(sequences)
    except TypeError:
        raise RuntimeError(f"{fn}: Expected iterable for input sequences, but got arg of type: "
                           f"{type(sequences)}") from None
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    for s in sequences:
        if not isinstance(s, Tensor) or s.ndim < 1:
            raise TypeError(f"{fn}: every sequence must be a Tensor with at least 1 dimension, got "
                            f"{getattr(s, 'shape', type(s).__name__)}")
        if tuple(s.shape[1:]) != tuple(sequences[0].shape[1:]):
            raise RuntimeError(f"{fn}: every sequence must have the same trailing dimensions, got "
                               f"{tuple(sequences[0].shape)} and {tuple(s.shape)}")
    return sequences


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack sequences of different lengths into one padded Tensor ``(T, B, *)`` (``(B, T, *)``).

    Args:
        sequences: an iterable of Tensors ``(L_b, *)`` with the same trailing dimensions.
        batch_first: return ``(B, T, *)``.
        padding_value: the value of the padding entries.
        padding_side: ``"right"`` (padding after each sequence) or ``"left"`` (before).
    """
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    sequences = _check_sequences("pad_sequence", sequences)
    lengths = numpy.array([s.shape[0] for s in sequences], dtype=numpy.int64)
    steps, starts = int(lengths.max()), numpy.concatenate([[0], numpy.cumsum(lengths)])
    time = numpy.arange(steps)[:, None]
    shift = steps - lengths if padding_side == "left" else numpy.zeros_like(lengths)
    position = time - shift[None, :]
    valid = (position >= 0) & (position < lengths[None, :])
    rows = numpy.where(valid, starts[:-1][None, :] + position, starts[-1])
    if batch_first:
        rows = rows.T
    values = sequences[0] if len(sequences) == 1 else cat(sequences)
    return _gather_padded(values, rows.reshape(-1), padding_value, rows.shape + tuple(values.shape[1:]))


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """Split a padded batch back into a list of its sequences (each ``lengths[b]`` steps long).

    Args:
        padded_sequences: a Tensor ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``).
        lengths: the length of each sequence (a list or a 1-D CPU Tensor).
        batch_first: whether the batch is batch-major.
    """
    padded = _time_major(padded_sequences, batch_first)
    lengths = _lengths_array(lengths, padded.shape[1])
    return [padded[:int(n), b] for b, n in enumerate(lengths)]


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of sequences of different lengths (``pad_sequence`` then ``pack_padded_sequence``).

    Args:
        sequences: a list of Tensors ``(L_b, *)``.
        enforce_sorted: require them in decreasing length.
    """
    sequences = _check_sequences("pack_sequence", sequences)
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of sequences in a PackedSequence (the inverse of ``pack_sequence``).

    Args:
        packed_sequences: a PackedSequence.
    """
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
