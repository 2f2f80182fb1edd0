"""``torch.multiprocessing.spawn``: run ``fn(i, *args)`` in ``nprocs`` new processes; a child's failure
is raised in the parent, naming its rank.

Each child runs ``_wrap``: it calls ``fn(i, *args)`` and, when that raises, puts the formatted traceback on
its own error queue and exits with status 1. ``ProcessContext.join`` waits for the children; the first
one found ended with a non-zero status ends the others (SIGTERM) and is raised: ``ProcessRaisedException``
carrying its traceback text, or ``ProcessExitedException`` when it died without one (a signal, a
``sys.exit(n)``).
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import signal
import sys
import traceback

__all__ = ["ProcessContext", "ProcessException", "ProcessExitedException", "ProcessRaisedException",
           "spawn", "start_processes"]


class ProcessException(Exception):  # noqa: N818 - torch.multiprocessing's name
    """A spawned process failed.

    Args:
        msg: the message.
        error_index: the failed process's rank (its ``i``).
        error_pid: its process id.
    """

    def __init__(self, msg: str, error_index: int, error_pid: int):
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, error_pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A spawned process raised; the message holds its traceback.

    Args:
        msg, error_index, error_pid: as in ``ProcessException``.
    """


class ProcessExitedException(ProcessException):
    """A spawned process ended with a non-zero exit status and no exception (a signal, ``sys.exit(n)``).

    Args:
        msg, error_index, error_pid: as in ``ProcessException``.
        exit_code: its exit status (negative: killed by that signal).
        signal_name: the signal's name when it was killed by one, else None.
    """

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name)


def _wrap(fn, i: int, args: tuple, error_queue) -> None:
    """The body of child ``i``: ``fn(i, *args)``; a traceback goes to the parent and the exit status is 1."""
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # NOTE: the parent sent SIGINT (it is ending the children); nothing to report
    except Exception:  # noqa: BLE001 - everything fn raises is reported to the parent
        error_queue.put(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes ``start_processes(..., join=False)`` started; ``join()`` waits for them.

    Args:
        processes: the started processes, in rank order.
        error_queues: one queue per process, where its traceback arrives when it raises.
    """

    def __init__(self, processes: list, error_queues: list):
        self.processes, self.error_queues = processes, error_queues

    def pids(self) -> list:
        """The process ids, in rank order."""
        return [p.pid for p in self.processes]

    def join(self, timeout=None) -> bool:
        """Wait until a process ends (or ``timeout`` seconds pass); True once all have ended successfully.

        Raises the first failure found (after terminating the other processes): ``ProcessRaisedException``
        with the child's traceback, or ``ProcessExitedException`` with its exit status.

        Args:
            timeout: seconds to wait at most; None waits until one ends.
        """
        running = [p for p in self.processes if p.exitcode is None]
        if running:
            ready = multiprocessing.connection.wait([p.sentinel for p in running], timeout=timeout)
            for p in running:
                if p.sentinel in ready:
                    p.join()
        # NOTE: a failure is looked for also when every process had ended before this call
        failed = next((i for i, p in enumerate(self.processes) if p.exitcode not in (None, 0)), None)
        if failed is not None:
            self._terminate_others(failed)
            raise self._failure(failed)
        return all(p.exitcode == 0 for p in self.processes)

    def _terminate_others(self, failed: int) -> None:
        for i, p in enumerate(self.processes):
            if i != failed and p.is_alive():
                p.terminate()
        for p in self.processes:
            p.join()

    def _failure(self, i: int) -> ProcessException:
        p = self.processes[i]
        if not self.error_queues[i].empty():
            text = self.error_queues[i].get()
            return ProcessRaisedException(f"\n\n-- Process {i} terminated with the following error:\n{text}", i, p.pid)
        if p.exitcode < 0:
            name = signal.Signals(-p.exitcode).name
            return ProcessExitedException(f"process {i} terminated with signal {name}", i, p.pid, p.exitcode, name)
        return ProcessExitedException(f"process {i} terminated with exit code {p.exitcode}", i, p.pid, p.exitcode)


def _check(fn, args, nprocs, start_method) -> None:
    if not callable(fn):
        raise TypeError(f"spawn: fn must be callable (it is run as fn(i, *args)), got {type(fn).__name__}")
    if not isinstance(args, (tuple, list)):
        raise TypeError(f"spawn: args must be a tuple (fn runs as fn(i, *args)), got {type(args).__name__}")
    if isinstance(nprocs, bool) or not isinstance(nprocs, int) or nprocs < 1:
        raise ValueError(f"spawn: nprocs must be a positive int (the number of processes), got {nprocs!r}")
    methods = multiprocessing.get_all_start_methods()
    if start_method not in methods:
        raise ValueError(f"spawn: start_method must be one of {methods}, got {start_method!r}")


def start_processes(fn, args=(), nprocs: int = 1, join: bool = True, daemon: bool = False,
                    start_method: str = "spawn"):
    """Start ``nprocs`` processes running ``fn(i, *args)`` for ``i`` in ``range(nprocs)``.

    Args:
        fn: a picklable callable (a module-level function under spawn), run as ``fn(i, *args)``.
        args: the rest of its arguments (shared tensors in them are sent shared).
        nprocs: how many processes.
        join: wait for them all (raising a failure); else return the ``ProcessContext``.
        daemon: start them as daemonic processes.
        start_method: ``"spawn"``, ``"fork"`` or ``"forkserver"``.
    """
    _check(fn, args, nprocs, start_method)
    ctx = multiprocessing.get_context(start_method)
    processes, error_queues = [], []
    for i in range(nprocs):
        error_queue = ctx.SimpleQueue()
        process = ctx.Process(target=_wrap, args=(fn, i, tuple(args), error_queue), daemon=daemon)
        process.start()
        processes.append(process)
        error_queues.append(error_queue)
    context = ProcessContext(processes, error_queues)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn, args=(), nprocs: int = 1, join: bool = True, daemon: bool = False, start_method: str = "spawn"):
    """``torch.multiprocessing.spawn``: ``start_processes`` with the spawn start method by default.

    Args:
        fn: a picklable callable, run as ``fn(i, *args)`` in process ``i``.
        args: the rest of its arguments.
        nprocs: how many processes (at least 1).
        join: wait for them all; else return the ``ProcessContext``.
        daemon: start them as daemonic processes.
        start_method: the multiprocessing start method.
    """
    return start_processes(fn, args, nprocs, join, daemon, start_method)
