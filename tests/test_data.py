"""Dataset, TensorDataset, Subset, random_split, DataLoader (batching, shuffling, resume, collation, transfer)."""

import numpy as np
import pytest

import cupynet
from cupynet import data
from cupynet.data.dataloader import pack_arrays, unpack_arrays
from cupynet.tensor import Tensor


def _dataset(n=10):
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    y = np.arange(n, dtype=np.int64) % 4
    return data.TensorDataset(Tensor(x), Tensor(y))


def _labels(batches):
    return [int(v) for _, y in batches for v in y.numpy()]


def test_batches_are_tensors_with_int64_labels_and_drop_last():
    loader = data.DataLoader(_dataset(10), batch_size=4, device="cpu")
    batches = list(loader)
    assert len(loader) == 3 and [b[0].shape for b in batches] == [(4, 3), (4, 3), (2, 3)]
    assert isinstance(batches[0][0], Tensor) and batches[0][0].dtype == np.float32
    assert batches[0][1].dtype == np.int64
    assert _labels(batches) == [i % 4 for i in range(10)]
    assert len(data.DataLoader(_dataset(10), batch_size=4, drop_last=True)) == 2
    assert len(list(data.DataLoader(_dataset(10), batch_size=4, drop_last=True, device="cpu"))) == 2


def test_shuffle_is_a_permutation_fixed_by_seed_and_new_each_epoch():
    ds = data.ArrayDataset(np.zeros((20, 2), np.float32), np.arange(20))
    a = data.DataLoader(ds, batch_size=6, shuffle=True, seed=5, device="cpu")
    b = data.DataLoader(ds, batch_size=6, shuffle=True, seed=5, device="cpu")
    first, second = _labels(a), _labels(a)
    assert sorted(first) == list(range(20)) and first != list(range(20)) and first != second
    assert _labels(b) == first and _labels(b) == second


def test_default_seed_comes_from_cupynet_random():
    ds = data.ArrayDataset(np.zeros((20, 2), np.float32), np.arange(20))
    cupynet.manual_seed(3)
    one = _labels(data.DataLoader(ds, batch_size=5, shuffle=True, device="cpu"))
    cupynet.manual_seed(3)
    assert _labels(data.DataLoader(ds, batch_size=5, shuffle=True, device="cpu")) == one
    gen_a = data.DataLoader(ds, batch_size=5, shuffle=True, generator=np.random.default_rng(1), device="cpu")
    gen_b = data.DataLoader(ds, batch_size=5, shuffle=True, generator=np.random.default_rng(1), device="cpu")
    assert _labels(gen_a) == _labels(gen_b)


def test_resume_mid_epoch_gives_the_same_order():
    ds = data.ArrayDataset(np.zeros((23, 2), np.float32), np.arange(23))
    loader = data.DataLoader(ds, batch_size=4, shuffle=True, seed=11, device="cpu")
    reference = data.DataLoader(ds, batch_size=4, shuffle=True, seed=11, device="cpu")
    expected = _labels(reference) + _labels(reference)
    seen, state = [], None
    for i, (_, y) in enumerate(loader):
        seen += [int(v) for v in y.numpy()]
        if i == 2:
            state = loader.state_dict()
            break
    assert state == {"seed": 11, "epoch": 0, "batches_done": 3}
    resumed = data.DataLoader(ds, batch_size=4, shuffle=True, seed=99, device="cpu")
    resumed.load_state_dict(state)
    rest = _labels(resumed) + _labels(resumed)
    assert seen + rest == expected
    assert resumed.state_dict() == {"seed": 11, "epoch": 2, "batches_done": 0}


def test_loader_state_is_validated():
    loader = data.DataLoader(_dataset(), batch_size=4)
    with pytest.raises(ValueError, match="expected keys"):
        loader.load_state_dict({"epoch": 1})
    with pytest.raises(ValueError, match="batches_done=9 but an epoch has only 3 batches"):
        loader.load_state_dict({"seed": 1, "epoch": 0, "batches_done": 9})
    with pytest.raises(ValueError, match="epoch must be a non-negative int"):
        loader.load_state_dict({"seed": 1, "epoch": -1, "batches_done": 0})
    assert loader.state_dict()["batches_done"] == 0


def test_bad_loader_arguments():
    with pytest.raises(ValueError, match="batch_size should be a positive integer value, but got batch_size=0"):
        data.DataLoader(_dataset(), batch_size=0)
    with pytest.raises(ValueError, match="give generator or seed, not both"):
        data.DataLoader(_dataset(), seed=1, generator=np.random.default_rng(0))
    with pytest.raises(TypeError, match="dataset must have __len__ and __getitem__"):
        data.DataLoader(42)
    with pytest.raises(TypeError, match="collate_fn must be callable"):
        data.DataLoader(_dataset(), collate_fn=3)


def test_custom_dataset_and_collate_of_nested_samples():
    class Pairs(data.Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return {"x": np.full(2, i, np.float32), "meta": (i, float(i) / 2)}

    batch = next(iter(data.DataLoader(Pairs(), batch_size=3, device="cpu")))
    assert batch["x"].shape == (3, 2) and batch["meta"][0].dtype == np.int64
    assert batch["meta"][1].dtype == np.float32 and batch["meta"][1].numpy().tolist() == [0.0, 0.5, 1.0]
    seen = []
    loader = data.DataLoader(Pairs(), batch_size=2, collate_fn=lambda s: seen.append(len(s)) or np.zeros(1),
                             device="cpu")
    list(loader)
    assert seen == [2, 2, 1]
    with pytest.raises(ValueError, match="different shapes"):
        data.default_collate([np.zeros(2), np.zeros(3)])


def test_pack_and_unpack_round_trip_mixed_dtypes():
    arrays = [np.arange(7, dtype=np.float32).reshape(7, 1), np.arange(3, dtype=np.int64),
              np.ones((2, 3), cupynet.bfloat16), np.zeros(0, np.float16), np.array([True, False])]
    buffer, layout = pack_arrays(arrays)
    assert buffer.dtype == np.uint8 and all(start % 16 == 0 for start, _, _ in layout)
    for original, back in zip(arrays, unpack_arrays(buffer, layout)):
        assert back.dtype == original.dtype and back.shape == original.shape
        assert back.tobytes() == original.tobytes()


def test_subset_and_random_split():
    ds = _dataset(10)
    parts = data.random_split(ds, [3, 7], seed=0)
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(parts[0].indices + parts[1].indices) == list(range(10))
    assert data.random_split(ds, [3, 7], seed=0)[0].indices == parts[0].indices
    frac = data.random_split(ds, [0.5, 0.3, 0.2], generator=np.random.default_rng(1))
    assert [len(p) for p in frac] == [5, 3, 2]
    x, y = parts[0][0]
    assert int(y.item()) == parts[0].indices[0] % 4
    with pytest.raises(ValueError, match="does not equal the length of the input dataset"):
        data.random_split(ds, [3, 3])
    with pytest.raises(IndexError, match="out of range"):
        data.Subset(ds, [0, 10])
    with pytest.raises(ValueError, match="Size mismatch"):
        data.TensorDataset(Tensor(np.zeros(3)), Tensor(np.zeros(4)))
    with pytest.raises(IndexError, match="index 10 is out of range"):
        ds[10]
    batch = next(iter(data.DataLoader(parts[1], batch_size=7, device="cpu")))
    assert batch[1].numpy().tolist() == [i % 4 for i in parts[1].indices]
