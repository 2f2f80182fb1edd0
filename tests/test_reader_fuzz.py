"""Fuzz the dataset readers: mutated IDX files (raw and .gz) and CIFAR-10 batches read or raise ValueError.

As tests/test_checkpoint_fuzz.py does for checkpoints (and with its Hypothesis strategies, derandomized, no
deadline): byte flips, overwrites, truncations and splices of valid files, aimed at the headers as well as
anywhere. Each mutant must give arrays of the data set's shape or one ValueError naming the file, within a
memory bound (tracemalloc peak): twice what the format lets the file declare, plus a constant.
"""

import gzip
import pickle
import struct
import tracemalloc

import numpy as np
import pytest
from test_checkpoint_fuzz import apply_bytes

from cupynet.data.datasets import cifar, mnist

SLACK = 2 * 2 ** 20  # NOTE: one inflate chunk (1 MiB), Python's bookkeeping, error texts
EXAMPLES = 300  # per format; about 10 s in all on two cores


def strategies():
    pytest.importorskip("hypothesis", reason="the reader fuzz tests need hypothesis (pip install hypothesis)")
    import checkpoint_mutations  # noqa: PLC0415 - imports hypothesis, so only once it is known to be there
    from hypothesis import settings  # noqa: PLC0415

    return checkpoint_mutations, settings(checkpoint_mutations.FUZZ, max_examples=EXAMPLES)


def measured(fn, path, bound):
    """Call ``fn()``; a ValueError must name ``path``; the tracemalloc peak must stay within ``bound``."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        start = tracemalloc.get_traced_memory()[0]
        try:
            result = fn()
        except ValueError as error:
            assert str(path) in str(error), f"the error does not name the file: {error}"
            result = error
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    assert peak <= bound, f"peak {peak} bytes, bound {bound}"
    return result


def idx(magic, array):
    return struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in array.shape) + array.tobytes()


IMAGES = np.random.default_rng(0).integers(0, 256, (6, 28, 28), dtype=np.uint8)
LABELS = np.arange(6, dtype=np.uint8)


@pytest.mark.parametrize("kind", ["images", "labels", "images.gz", "labels.gz"])
def test_mutated_idx_files(tmp_path, kind):
    m, fuzz = strategies()
    images = kind.startswith("images")
    raw = idx(0x803, IMAGES) if images else idx(0x801, LABELS)
    gz = kind.endswith(".gz")
    base = gzip.compress(raw, compresslevel=6, mtime=0) if gz else raw
    magic, ndim, expected = (0x803, 3, (None, 28, 28)) if images else (0x801, 1, None)
    path = tmp_path / f"mutant{'.gz' if gz else ''}"
    spots = [0, 4, 10, 16] if gz else [0, 4, 8, 12]  # NOTE: gzip header / deflate start; IDX magic and dims

    @fuzz
    @m.given(m.byte_mutation(len(base), spots))
    def run(mutation):
        data = apply_bytes(base, mutation)
        path.write_bytes(data)
        # NOTE: a raw file allocates at most its own size; a .gz at most the declared size, which is refused
        # above 1032 times the file (deflate's largest ratio): twice that covers the bytearray's growth
        bound = 2 * (mnist._MAX_DEFLATE_RATIO * len(data) if gz else len(data)) + SLACK
        result = measured(lambda: mnist.read_idx("MNIST", path, magic, ndim, expected), path, bound)
        if not isinstance(result, ValueError):
            assert result.dtype == np.uint8 and result.ndim == ndim and result.shape[0] > 0
            if images:
                assert result.shape[1:] == (28, 28)

    run()


def test_mutated_cifar_batches(tmp_path):
    m, fuzz = strategies()
    rng = np.random.default_rng(1)
    batch = {b"batch_label": b"testing batch 1 of 1", b"labels": rng.integers(0, 10, 8).tolist(),
             b"data": rng.integers(0, 256, (8, 3072), dtype=np.uint8), b"filenames": [b"a.png"] * 8}
    bases = [pickle.dumps(batch, protocol=2), pickle.dumps(batch, protocol=4)]
    path = tmp_path / "test_batch"

    @fuzz
    @m.given(m.st.integers(0, 1).flatmap(lambda i: m.st.tuples(m.st.just(i), m.byte_mutation(len(bases[i]), [0, 2]))))
    def run(choice):
        index, mutation = choice
        data = apply_bytes(bases[index], mutation)
        path.write_bytes(data)
        # NOTE: the bytes read, the pickletools scan's copies of its arguments, and the objects built (priced
        # at most MAX_COST_RATIO times the file, plus 1 MiB, before unpickling)
        bound = (cifar.MAX_COST_RATIO + 3) * len(data) + 2 ** 20 + SLACK
        result = measured(lambda: cifar._read_batch(path), path, bound)
        if not isinstance(result, ValueError):
            images, labels = result
            assert images.dtype == np.uint8 and images.shape[1:] == (3072,) and labels.shape == images.shape[:1]
            assert labels.min() >= 0 and labels.max() <= 9

    run()
