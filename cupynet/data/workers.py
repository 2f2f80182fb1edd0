"""DataLoader worker processes: each gets index lists, fetches and collates batches, and sends them back.

The main process hands batch ``k`` to worker ``k % num_workers`` (as PyTorch),
keeps ``prefetch_factor * num_workers`` batches in flight and yields them in
task order, so the batches come in the order of a single-process loader.
Workers send host NumPy arrays; the main process moves each batch to the
device (workers never touch CUDA).

NOTE (start method): ``fork`` is fast but CuPy is not fork-safe once CUDA is
initialised; the default is ``fork`` on Linux while CuPy has not been imported
in this process, else ``spawn`` (which needs a picklable dataset and
collate_fn, and a script guarded by ``if __name__ == "__main__"``). Pass
``multiprocessing_context`` to choose.

Worker ``i`` seeds Python's ``random`` and cupynet's global generator with
``base_seed + i``; ``base_seed`` comes from the loader's seed and the epoch
(persistent workers: the epoch they were started in), as PyTorch derives it
from its generator. ``get_worker_info()`` tells a worker who it is.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import random
import sys
import threading
import time
import traceback

__all__ = ["WorkerInfo", "get_worker_info", "WorkerPool", "default_context", "fetch_batch", "fetch_stream"]

_WORKER_INFO = None  # NOTE: set only inside a worker process (one per process, never shared)
PARENT_POLL_S = 1.0  # how often a waiting worker checks that its parent process is still there
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


class WorkerInfo:
    """Who this worker is: ``id``, ``num_workers``, ``seed`` and its copy of the ``dataset``.

    Args:
        id: the worker index (0 .. num_workers - 1).
        num_workers: how many workers the loader runs.
        seed: the seed this worker's random generators got.
        dataset: the worker's copy of the dataset.
    """

    def __init__(self, id, num_workers, seed, dataset):  # noqa: A002 - PyTorch's attribute name
        self.id, self.num_workers, self.seed, self.dataset = id, num_workers, seed, dataset

    def __repr__(self):
        return f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed})"


def get_worker_info():
    """This worker's ``WorkerInfo`` inside a DataLoader worker process; None in the main process."""
    return _WORKER_INFO


def default_context() -> str:
    """``"fork"`` on Linux while CuPy is not imported in this process, else ``"spawn"`` (see the module NOTE)."""
    return "fork" if sys.platform.startswith("linux") and "cupy" not in sys.modules else "spawn"


def fetch_batch(dataset, collate_fn, indices, batched):
    """One collated batch of a map-style dataset (``__getitems__`` when the loader may use it).

    Args:
        dataset: the dataset.
        collate_fn: turns a list of samples into a batch.
        indices: the sample indices.
        batched: whether ``dataset.__getitems__`` returns the collated batch (the default collate path).
    """
    if batched:
        return dataset.__getitems__(indices)
    return collate_fn([dataset[i] for i in indices])


def fetch_stream(stream, collate_fn, batch_size, drop_last):
    """The next collated batch of an iterable dataset's iterator; StopIteration when it is used up.

    Args:
        stream: the dataset's iterator.
        collate_fn: turns a list of samples into a batch.
        batch_size: samples per batch.
        drop_last: drop a last, incomplete batch.
    """
    samples = []
    for sample in stream:
        samples.append(sample)
        if len(samples) == batch_size:
            break
    if not samples or (drop_last and len(samples) < batch_size):
        raise StopIteration
    return collate_fn(samples)


class _Failure:
    """An exception raised in a worker, carried to the main process with its traceback and the worker id."""

    def __init__(self, worker_id, where):
        kind = sys.exc_info()[0]
        self.kind = kind
        self.text = (f"Caught {kind.__name__} {where} in DataLoader worker process {worker_id}.\n"
                     f"Original {traceback.format_exc()}")

    def reraise(self):
        try:
            error = self.kind(self.text)
        except Exception:  # NOTE: an exception class whose constructor wants other arguments
            error = RuntimeError(self.text)
        raise error


class _Exhausted:
    """An iterable dataset's worker has no more batches this epoch."""


def _die_with_parent(spec) -> int:
    """Arrange for this worker to end when its parent does (see the module NOTE); returns the parent's pid.

    Args:
        spec: the pool's spec: ``parent_pid`` (the loader's process), ``parent_is_starter`` (it started this
            process itself, not through a fork server) and ``pdeathsig`` (the pool was started from the main
            thread).
    """
    if spec.get("pdeathsig") and sys.platform.startswith("linux"):
        try:
            import ctypes  # noqa: PLC0415 - only workers need it

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, 9, 0, 0, 0)  # NOTE: 9 = SIGKILL; the worker holds nothing to clean up
        except (OSError, AttributeError):
            pass  # NOTE: no prctl here; the poll in _next_task still ends an orphan
    parent = os.getppid()
    # NOTE: the parent may have died before prctl took effect; the kernel then sends nothing
    if spec.get("parent_is_starter") and parent != spec.get("parent_pid"):
        os._exit(0)
    return parent


def _parent_gone(parent: int) -> bool:
    """True once this process was re-parented, i.e. the process that started it has died."""
    return os.getppid() != parent


def _next_task(tasks, parent):
    """The next task, waiting as long as it takes; ends the process (no cleanup) once the parent is gone.

    Args:
        tasks: this worker's task queue.
        parent: the pid of the process that started this worker.
    """
    while True:
        try:
            return tasks.get(timeout=PARENT_POLL_S)
        except queue.Empty:
            if _parent_gone(parent):
                # NOTE: os._exit, not return: the result queue's feeder thread could block the exit forever
                # on a pipe nobody reads any more
                os._exit(0)


def _worker_loop(spec, worker_id, seed, tasks, results):
    """A worker's life: seed, ``worker_init_fn``, then fetch each task until told to stop (None)."""
    global _WORKER_INFO
    parent = _die_with_parent(spec)
    random.seed(seed)
    from cupynet import random as cn_random  # NOTE: a spawned worker imports cupynet afresh
    cn_random.manual_seed(seed)
    _WORKER_INFO = WorkerInfo(worker_id, spec["num_workers"], seed, spec["dataset"])
    try:
        if spec["worker_init_fn"] is not None:
            spec["worker_init_fn"](worker_id)
    except Exception:
        results.put((None, _Failure(worker_id, "in worker_init_fn")))
        return
    stream, stream_epoch = None, None
    while True:
        task = _next_task(tasks, parent)
        if task is None:
            return
        task_id, indices, epoch = task
        try:
            if spec["iterable"]:
                if stream_epoch != epoch:
                    stream, stream_epoch = iter(spec["dataset"]), epoch
                batch = fetch_stream(stream, spec["collate_fn"], spec["batch_size"], spec["drop_last"])
            else:
                batch = fetch_batch(spec["dataset"], spec["collate_fn"], indices, spec["batched"])
            results.put((task_id, batch))
        except StopIteration:
            results.put((task_id, _Exhausted()))
        except Exception:
            results.put((task_id, _Failure(worker_id, "")))


class WorkerPool:
    """``num_workers`` processes fetching batches for one DataLoader (kept across epochs when persistent).

    Args:
        spec: what a worker needs: dataset, collate_fn, batched, iterable, batch_size, drop_last,
            worker_init_fn, num_workers.
        base_seed: worker ``i`` seeds its generators with ``base_seed + i``.
        context: the multiprocessing start method.
    """

    def __init__(self, spec, base_seed, context):
        ctx = multiprocessing.get_context(context)
        spec = dict(spec, parent_pid=os.getpid(), parent_is_starter=ctx.get_start_method() != "forkserver",
                    pdeathsig=threading.current_thread() is threading.main_thread())
        self.num_workers = spec["num_workers"]
        self.tasks = [ctx.Queue() for _ in range(self.num_workers)]
        self.results = ctx.Queue()
        self.procs = [ctx.Process(target=_worker_loop, args=(spec, i, (base_seed + i) % 2**63, self.tasks[i],
                                                             self.results), daemon=True)
                      for i in range(self.num_workers)]
        for proc in self.procs:
            proc.start()
        self._epoch = 0

    def run(self, index_batches, prefetch, timeout):
        """Yield the collated batches of ``index_batches`` (None entries for an iterable dataset) in order.

        Args:
            index_batches: an iterator of index lists (map-style) or of None (iterable-style, until exhausted).
            prefetch: batches in flight per worker.
            timeout: seconds to wait for one batch (0: forever, but a dead worker is still noticed).
        """
        self._epoch += 1
        owner, ready, active = {}, {}, set(range(self.num_workers))
        sent = want = 0
        pending = iter(index_batches)
        while True:
            while active and sent - want < prefetch * self.num_workers:
                worker = self._next_worker(sent, active)
                indices = next(pending, StopIteration)
                if indices is StopIteration:
                    active = set()
                    break
                self.tasks[worker].put((sent, indices, self._epoch))
                owner[sent], sent = worker, sent + 1
            if want == sent:
                return
            while want not in ready:
                task_id, item = self._get(timeout)
                if isinstance(item, _Failure):
                    item.reraise()
                ready[task_id] = item
            item = ready.pop(want)
            want += 1
            if isinstance(item, _Exhausted):
                active.discard(owner[want - 1])
                continue
            yield item

    def _next_worker(self, task_id, active):
        worker = task_id % self.num_workers
        while worker not in active:
            worker = (worker + 1) % self.num_workers
        return worker

    def _get(self, timeout):
        deadline = time.monotonic() + timeout if timeout > 0 else None
        while True:
            try:
                return self.results.get(timeout=0.1)
            except queue.Empty:
                pass
            for proc in self.procs:
                if not proc.is_alive() and proc.exitcode not in (0, None):
                    raise RuntimeError(f"DataLoader worker (pid {proc.pid}) exited unexpectedly with exit code "
                                       f"{proc.exitcode}")
            if deadline is not None and time.monotonic() > deadline:
                raise RuntimeError(f"DataLoader timed out after {timeout} seconds")

    def shutdown(self) -> None:
        """Stop the workers (a stop task each, then join; terminate one that does not stop) and close the queues."""
        for tasks in self.tasks:
            try:
                tasks.put(None)
            except (OSError, ValueError):
                pass
        for proc in self.procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=5)
        for q in [*self.tasks, self.results]:
            q.cancel_join_thread()
            q.close()
        self.procs = []
