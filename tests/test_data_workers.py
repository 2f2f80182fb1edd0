"""DataLoader worker processes, samplers, IterableDataset and ConcatDataset (torch.utils.data names)."""

import time

import numpy as np
import pytest

from cupynet import data
from cupynet.tensor import Tensor


class Tagged(data.Dataset):
    """Sample i is (i, the id of the worker that loaded it; -1 in the main process)."""

    def __init__(self, n=20, fail_at=None, sleep=0.0):
        self.n, self.fail_at, self.sleep = n, fail_at, sleep

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.fail_at:
            raise ValueError(f"bad sample {i}")
        time.sleep(self.sleep)
        info = data.get_worker_info()
        return np.int64(i), np.int64(-1 if info is None else info.id)


class Stream(data.IterableDataset):
    """0..n-1, split between workers by get_worker_info, as PyTorch's documentation does it."""

    def __init__(self, n=10):
        self.n = n

    def __iter__(self):
        info = data.get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))


def _pairs(loader):
    return [(int(i), int(w)) for x, ws in loader for i, w in zip(x.numpy(), ws.numpy())]


def test_workers_keep_the_single_process_order_and_take_batches_round_robin():
    plain = data.DataLoader(Tagged(), batch_size=3, shuffle=True, seed=4, device="cpu")
    for prefetch in (1, 3):
        workers = data.DataLoader(Tagged(), batch_size=3, shuffle=True, seed=4, num_workers=2, device="cpu",
                                  prefetch_factor=prefetch)
        got, want = _pairs(workers), _pairs(plain)
        assert [i for i, _ in got] == [i for i, _ in want]
        assert [w for _, w in got] == [(k // 3) % 2 for k in range(20)]  # batch k from worker k % 2
        assert workers._pool is None  # not persistent: shut down after the epoch
        plain._epoch = 0


def test_persistent_workers_survive_epochs_and_seed_per_worker():
    seen = []
    loader = data.DataLoader(Tagged(8), batch_size=2, num_workers=2, persistent_workers=True, device="cpu",
                             worker_init_fn=lambda wid: seen.append(wid))
    first = _pairs(loader)
    pool = loader._pool
    second = _pairs(loader)
    assert first == second and loader._pool is pool and all(p.is_alive() for p in pool.procs)
    pool.shutdown()
    assert seen == []  # worker_init_fn ran in the workers, not here


def test_worker_info_and_init_fn_in_workers():
    class Info(data.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            info = data.get_worker_info()
            import random
            return np.array([info.id, info.num_workers, info.seed % 1000, random.random() * 0])

    rows = np.concatenate([b.numpy() for b in data.DataLoader(Info(), batch_size=1, num_workers=2, device="cpu")])
    assert rows[:, 0].tolist() == [0, 1, 0, 1] and set(rows[:, 1]) == {2}
    assert rows[0, 2] != rows[1, 2]  # each worker its own seed
    assert data.get_worker_info() is None


def test_worker_exception_surfaces_with_the_worker_id():
    loader = data.DataLoader(Tagged(10, fail_at=5), batch_size=2, num_workers=2, device="cpu")
    with pytest.raises(ValueError, match=r"Caught ValueError +in DataLoader worker process 0") as caught:
        list(loader)
    assert "bad sample 5" in str(caught.value) and "Traceback" in str(caught.value)
    assert loader._pool is None


def test_worker_init_fn_failure_and_timeout():
    def broken(worker_id):
        raise KeyError("no such file")

    with pytest.raises(KeyError, match="in worker_init_fn in DataLoader worker process"):
        list(data.DataLoader(Tagged(4), num_workers=2, worker_init_fn=broken, device="cpu"))
    slow = data.DataLoader(Tagged(4, sleep=3.0), num_workers=1, timeout=0.3, device="cpu")
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.3 seconds"):
        list(slow)


def test_iterable_dataset_in_process_and_with_workers():
    alone = [int(v) for b in data.DataLoader(Stream(10), batch_size=2, device="cpu") for v in b.numpy()]
    assert alone == list(range(10))
    shared = [b.numpy().tolist() for b in data.DataLoader(Stream(10), batch_size=2, num_workers=2, device="cpu")]
    # NOTE: worker 0 streams 0,2,4,6,8 and worker 1 streams 1,3,5,7,9; batches alternate between them (torch's order)
    assert shared == [[0, 2], [1, 3], [4, 6], [5, 7], [8], [9]]
    dropped = data.DataLoader(Stream(10), batch_size=2, num_workers=2, drop_last=True, device="cpu")
    assert [b.numpy().tolist() for b in dropped] == [[0, 2], [1, 3], [4, 6], [5, 7]]
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        data.DataLoader(Stream(), shuffle=True)


def test_sampler_and_batch_sampler_options():
    ds = Tagged(7)
    chosen = data.DataLoader(ds, batch_size=2, sampler=[6, 0, 3], device="cpu")
    assert [i for i, _ in _pairs(chosen)] == [6, 0, 3] and len(chosen) == 2
    batches = data.DataLoader(ds, batch_sampler=[[1, 2], [5]], device="cpu")
    assert [x.numpy().tolist() for x, _ in batches] == [[1, 2], [5]] and len(batches) == 2
    with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
        data.DataLoader(ds, sampler=[0], shuffle=True)
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive with batch_size"):
        data.DataLoader(ds, batch_sampler=[[0]], batch_size=2)
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        data.DataLoader(ds, num_workers=-1)
    with pytest.raises(ValueError, match="prefetch_factor option could only be specified in multiprocessing"):
        data.DataLoader(ds, prefetch_factor=2)
    with pytest.raises(ValueError, match="persistent_workers option needs num_workers > 0"):
        data.DataLoader(ds, persistent_workers=True)
    with pytest.raises(ValueError, match="timeout option should be non-negative"):
        data.DataLoader(ds, timeout=-1)
    assert data.DataLoader(ds, pin_memory=True, device="cpu").pin_memory  # accepted (see docs/data.md)


def test_samplers_against_torch():
    torch = pytest.importorskip("torch")
    tud = torch.utils.data
    for size, drop in ((3, False), (3, True), (10, False)):
        assert list(data.BatchSampler(range(8), size, drop)) == list(tud.BatchSampler(range(8), size, drop))
        assert len(data.BatchSampler(range(8), size, drop)) == len(tud.BatchSampler(range(8), size, drop))
    assert list(data.SequentialSampler(range(5))) == list(tud.SequentialSampler(range(5)))
    parts = [Tensor(np.arange(3, dtype=np.float32)), Tensor(np.arange(10, 15, dtype=np.float32))]
    ours = data.ConcatDataset([data.TensorDataset(p) for p in parts])
    theirs = tud.ConcatDataset([tud.TensorDataset(torch.tensor(p.numpy())) for p in parts])
    assert len(ours) == len(theirs) and ours.cumulative_sizes == theirs.cumulative_sizes
    assert [float(ours[i][0].item()) for i in range(-8, 8)] == [float(theirs[i][0]) for i in range(-8, 8)]


def test_random_samplers():
    rs = data.RandomSampler(range(10), generator=np.random.default_rng(0))
    first, second = list(rs), list(rs)
    assert sorted(first) == list(range(10)) and first != second
    assert list(data.RandomSampler(range(10), generator=3)) == list(data.RandomSampler(range(10), generator=3))
    long = list(data.RandomSampler(range(4), num_samples=10, generator=1))
    assert len(long) == 10 and sorted(long[:4]) == [0, 1, 2, 3] and sorted(long[4:8]) == [0, 1, 2, 3]
    drawn = list(data.RandomSampler(range(3), replacement=True, num_samples=50, generator=2))
    assert len(drawn) == 50 and set(drawn) <= {0, 1, 2}
    assert sorted(data.SubsetRandomSampler([7, 3, 9], generator=0)) == [3, 7, 9]
    weighted = list(data.WeightedRandomSampler([0.0, 1.0, 3.0], 400, generator=0))
    counts = np.bincount(weighted, minlength=3)
    assert counts[0] == 0 and 60 < counts[1] < 140  # NOTE: 100 expected, binomial sd 8.7: ~4.6 sd each side
    no_repeat = list(data.WeightedRandomSampler([1.0, 1.0, 1.0, 0.0], 3, replacement=False, generator=0))
    assert sorted(no_repeat) == [0, 1, 2]
    with pytest.raises(ValueError, match="cannot draw 4 samples without replacement"):
        data.WeightedRandomSampler([1.0, 1.0, 1.0, 0.0], 4, replacement=False)
    with pytest.raises(ValueError, match="weights should be a non-empty 1-D sequence"):
        data.WeightedRandomSampler([-1.0, 2.0], 2)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        data.RandomSampler(range(3), num_samples=0)
    with pytest.raises(TypeError, match="generator must be None"):
        list(data.RandomSampler(range(3), generator="seed"))
    with pytest.raises(ValueError, match="drop_last should be a boolean value"):
        data.BatchSampler(range(3), 2, drop_last=None)


def test_random_sampler_with_replacement_draws_lazily_from_a_huge_num_samples():
    # NOTE: minGPT's trainer asks for RandomSampler(replacement=True, num_samples=int(1e10))
    from cupynet.data import RandomSampler

    sampler = RandomSampler(list(range(7)), replacement=True, num_samples=int(1e10), generator=3)
    first = [index for index, _ in zip(iter(sampler), range(100_000))]
    assert len(sampler) == int(1e10) and len(first) == 100_000 and set(first) == set(range(7))
    small = list(RandomSampler(list(range(7)), replacement=True, num_samples=50, generator=3))
    assert small == first[:50]  # NOTE: the same stream whatever the size
    wrapped = list(RandomSampler(list(range(4)), num_samples=10, generator=5))
    assert len(wrapped) == 10 and sorted(wrapped[:4]) == sorted(wrapped[4:8]) == [0, 1, 2, 3]
