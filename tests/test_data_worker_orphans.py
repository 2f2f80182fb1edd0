"""DataLoader workers end when the loader's process dies, even by SIGKILL (no cleanup code runs then).

A child process iterates a DataLoader with 2 workers (tests/_orphan_loader.py), prints the workers'
pids, and is killed with SIGKILL mid-iteration; the workers must be gone within ORPHAN_BOUND_S.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cupynet.data import workers

# NOTE: the poll interval plus generous room for a loaded machine; an orphan used to live forever
ORPHAN_BOUND_S = workers.PARENT_POLL_S + 9.0
HERE = Path(__file__).parent

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads process states from /proc")


def alive(pid):
    """True while ``pid`` runs (a zombie, dead but not yet reaped by its new parent, counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def start_loader(method, persistent, in_thread=False):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")]))
    child = subprocess.Popen([sys.executable, str(HERE / "_orphan_loader.py"), method, str(int(persistent)),
                              str(int(in_thread))],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    line = child.stdout.readline()
    if not line:
        child.kill()
        pytest.fail(f"the loader process printed no worker pids: {child.communicate()[1][-2000:]}")
    return child, [int(p) for p in line.split()]


def kill_and_watch(child, pids):
    """SIGKILL the loader process; seconds until all its workers are gone (fails past ORPHAN_BOUND_S)."""
    assert len(pids) == 2 and all(alive(p) for p in pids)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    start = time.monotonic()
    while any(alive(p) for p in pids):
        if time.monotonic() - start > ORPHAN_BOUND_S:
            for pid in pids:  # NOTE: do not leave the orphans behind for the rest of the suite
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)
            pytest.fail(f"workers {pids} outlived their killed parent by more than {ORPHAN_BOUND_S} s")
        time.sleep(0.05)
    return time.monotonic() - start


@pytest.mark.parametrize("method", ["fork", "spawn"])
@pytest.mark.parametrize("persistent", [False, True])
def test_workers_end_when_the_loader_process_is_killed(method, persistent):
    child, pids = start_loader(method, persistent)
    kill_and_watch(child, pids)


def test_a_pool_started_from_a_thread_ends_by_the_parent_check_alone():
    """prctl is not armed then (the signal follows the starting thread); the poll must end the orphans."""
    child, pids = start_loader("fork", True, in_thread=True)
    kill_and_watch(child, pids)


def test_parent_check_ends_an_orphan_without_the_death_signal(monkeypatch):
    """Without prctl (as on macOS, or a pool started from a thread) the periodic parent check alone suffices."""
    calls = []

    class Tasks:
        def get(self, timeout):
            calls.append(timeout)
            raise workers.queue.Empty

    def fake_exit(code):
        raise SystemExit(code)

    monkeypatch.setattr(workers.os, "_exit", fake_exit)
    monkeypatch.setattr(workers.os, "getppid", lambda: 1)
    with pytest.raises(SystemExit):
        workers._next_task(Tasks(), parent=os.getpid())
    assert calls == [workers.PARENT_POLL_S]
