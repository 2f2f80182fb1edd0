"""How a ``cupynet train`` run stops early: signals (Ctrl-C, SIGTERM), a closed stdout, --max-steps, --patience.

A first SIGINT (Ctrl-C) or SIGTERM (a cluster's preemption) asks the loop to stop after the step it is in;
the run then saves a checkpoint at that step (with ``--out``), prints its summary and exits with the shell's
status for that signal: 130 for SIGINT, 143 for SIGTERM, so ``cupynet train && next`` does not carry on.
A second signal aborts at once (``Aborted``), without a traceback. A stdout that was closed (``cupynet
train | head -1``) stops the run the same way, quietly, with status 141 (what SIGPIPE would give).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading

__all__ = ["StopRequest", "Aborted", "GuardedStream", "stop_on_signals", "EXIT_STATUS"]

# NOTE: 128 + the signal number, as a shell reports a process that a signal ended
EXIT_STATUS = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGPIPE: 141, signal.SIGUSR1: 138}
_NAMES = {signal.SIGINT: "interrupt (Ctrl-C)", signal.SIGTERM: "SIGTERM", signal.SIGUSR1: "SIGUSR1"}
# NOTE: SIGUSR1 asks for the same clean stop but never counts as the second signal that aborts: --nproc's
# launcher passes a Ctrl-C or SIGTERM on to every rank as SIGUSR1 (Open MPI forwards it as it is), and a rank
# may also see the terminal's own SIGINT (schedulers such as SLURM send it before a time limit, too)
_POLITE = (signal.SIGUSR1,)
LAUNCHED_VARIABLE = "CUPYNET_NPROC_LAUNCHER"  # set for the ranks that `--nproc` started


class Aborted(KeyboardInterrupt):
    """A second signal: stop now, without saving. ``status`` is the exit status (130 or 143).

    Args:
        status: the exit status for the shell.
    """

    def __init__(self, status):
        super().__init__(status)
        self.status = status


class StopRequest:
    """Why and with what exit status the run should stop after the current step (``requested`` once asked).

    Used as the SIGINT/SIGTERM handler: the first signal asks, the second raises ``Aborted``.
    """

    def __init__(self):
        self.requested, self.reason, self.status, self.signalled = False, None, 0, False

    def request(self, reason, status=0):
        """Ask the loop to stop after the current step (the first reason given wins).

        Args:
            reason: words for the "stopped at step N" line.
            status: the process's exit status once stopped (0: a planned stop such as --max-steps).
        """
        if not self.requested:
            self.requested, self.reason, self.status = True, reason, status

    def __call__(self, signum, frame):
        status = EXIT_STATUS.get(signum, 128 + signum)
        if signum in _POLITE:
            # NOTE: under --nproc the launcher reports the signal it was sent; a rank that exited non-zero
            # would make mpiexec print a job-failure block as well
            launched = os.environ.get(LAUNCHED_VARIABLE) == "1"
            self.request("a signal sent to --nproc" if launched else _NAMES[signum], 0 if launched else status)
            return
        if self.signalled:
            raise Aborted(status)
        self.signalled = True
        self.request(_NAMES.get(signum, f"signal {signum}"), status)
        print(f"\n{_NAMES.get(signum, 'signal')}: stopping after the current step and saving a checkpoint "
              "(press Ctrl-C again to abort without saving)", file=sys.stderr, flush=True)


@contextlib.contextmanager
def stop_on_signals(stop):
    """Route SIGINT, SIGTERM and SIGUSR1 to ``stop`` while the block runs (main thread only), then restore them.

    Args:
        stop: the StopRequest.
    """
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    previous = {number: signal.signal(number, stop) for number in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1)}
    try:
        yield stop
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


class GuardedStream:
    """A text stream that turns a closed reader (BrokenPipeError) into a quiet stop instead of a traceback.

    After the reader went away every later write is dropped, stdout's descriptor is pointed at /dev/null (so
    Python's own flush at exit does not complain either) and ``on_close`` is called once.

    Args:
        stream: the stream to write to (stdout).
        on_close: called with no arguments when the reader is found gone.
    """

    def __init__(self, stream, on_close=None):
        self.stream, self.on_close, self.closed_reader = stream, on_close, False

    def write(self, text):
        """Write ``text``; after the reader went away, drop it (its length is returned either way).

        Args:
            text: the text.
        """
        if self.closed_reader:
            return len(text)
        try:
            return self.stream.write(text)
        except BrokenPipeError:
            self._reader_gone()
            return len(text)

    def flush(self):
        """Flush the stream, unless its reader went away."""
        if self.closed_reader:
            return
        try:
            self.stream.flush()
        except BrokenPipeError:
            self._reader_gone()

    def _reader_gone(self):
        self.closed_reader = True
        silence_stdout()
        if self.on_close is not None:
            self.on_close()

    def __getattr__(self, name):
        return getattr(self.stream, name)


def silence_stdout():
    """Point stdout's file descriptor at /dev/null (after its reader closed the pipe)."""
    with contextlib.suppress(AttributeError, OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
