"""Atomic, durable file writes, and the removal of temporary files that crashed writers left behind.

A write goes to ``.<name>.tmp-<pid>-<host>-<random>`` in the target's directory:
flush, fsync, ``os.replace`` over ``<name>``, fsync of the directory. A crash at
any moment leaves the old file or the new one, plus at worst that temp file.
The writer's process id and a tag of its host are in the name, so a later
writer can tell a temp file whose writer is dead (remove it) from one that a
live process is still writing (leave it).

The file gets the mode ``open()`` would give it (0666 less the umask), or, when it
replaces a file, that file's mode.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
import stat
import time
import zlib

__all__ = ["atomic_write", "remove_stale_temp_files", "TEMP_MARKER", "stall_point"]

TEMP_MARKER = ".tmp-"
# NOTE: \Z, not $ (which also matches before a trailing newline)
_TEMP_NAME = re.compile(r"^\.(?P<target>.+)\.tmp-(?P<pid>\d{1,10})-(?P<host>[0-9a-f]{8})-[0-9a-f]{8}\Z")


def _host_tag():
    return f"{zlib.crc32(socket.gethostname().encode('utf-8', 'replace')):08x}"


def atomic_write(path, write_fn):
    """Write a file atomically: temp file beside it, flush + fsync, rename over ``path``, fsync the directory.

    Stale temp files of earlier, killed writes to the same ``path`` are removed first.

    Args:
        path: the destination.
        write_fn: called with an open binary file object to write the content.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"save: directory {directory} does not exist")
    base = os.path.basename(path)
    remove_stale_temp_files(directory, lambda target: target == base)
    mode = _existing_mode(path)
    tmp, fd = _create_temp(directory, base)
    try:
        if mode is not None and hasattr(os, "fchmod"):
            os.fchmod(fd, mode)  # NOTE: replacing a file keeps its permissions
        with os.fdopen(fd, "wb") as f:
            stall_point("opened", path)
            write_fn(f)
            f.flush()
            stall_point("written", path)
            os.fsync(f.fileno())
        stall_point("synced", path)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    stall_point("replaced", path)
    _fsync_directory(directory)


def _existing_mode(path):
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _create_temp(directory, base):
    # NOTE: O_EXCL with mode 0o666: the kernel applies the umask, as for open(path, "wb")
    # (tempfile.mkstemp would give 0600).
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = os.path.join(directory, f".{base}{TEMP_MARKER}{os.getpid()}-{_host_tag()}-{secrets.token_hex(4)}")
        try:
            return tmp, os.open(tmp, flags, 0o666)
        except FileExistsError:
            continue
    raise FileExistsError(f"save: could not create a temporary file in {directory}")


def _fsync_directory(directory):
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # some platforms cannot open directories; the rename is still atomic
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_stale_temp_files(directory, wanted) -> list:
    """Remove the temp files in ``directory`` whose writer process is dead; returns the paths removed.

    Only names written by ``atomic_write`` on this host are considered (``.<target>.tmp-<pid>-<host>-<hex>``),
    only when ``wanted(target)`` is true, and only when process ``<pid>`` no longer runs. Best effort: a
    directory that cannot be listed, or a file another process removed first, is skipped silently.

    Args:
        directory: the directory to clean.
        wanted: called with a temp file's target name (``step-00000010.ckpt``); True to consider it.
    """
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    host, removed = _host_tag(), []
    for name in names:
        match = _TEMP_NAME.match(name)
        if match is None or match["host"] != host or not wanted(match["target"]) or _pid_alive(int(match["pid"])):
            continue
        try:
            os.unlink(os.path.join(directory, name))
            removed.append(os.path.join(directory, name))
        except OSError:
            pass
    return removed


def _pid_alive(pid) -> bool:
    # NOTE: errs on the side of "alive": a file kept too long costs disk space, a file removed
    # under a live writer would make its save fail. Without POSIX signals there is no safe probe
    # (os.kill on Windows terminates the process), so nothing is removed there.
    if pid == os.getpid() or pid <= 0 or os.name != "posix":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):  # PermissionError: alive, owned by another user
        return True
    try:  # a zombie (killed, not yet reaped by its parent) writes nothing more
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read()
        return fields[fields.rfind(b")") + 2:][:1] != b"Z"
    except OSError:
        return True


def stall_point(point, path):
    """Stall a save at a named point when a test asks for it (``CUPYNET_TEST_SAVE_STALL``); else nothing.

    NOTE: tests set CUPYNET_TEST_SAVE_STALL to a flag file and CUPYNET_TEST_SAVE_STALL_AT to a point
    (``opened``, ``array:<k>`` after the k-th array, ``written``, ``synced``, ``replaced``; default
    ``array:1``): the save announces it reached that point by creating the flag file, then sleeps,
    so a test can SIGKILL it exactly there. Unset (always, in real use) it costs one lookup.

    Args:
        point: the name of this point of the save.
        path: the file being saved.
    """
    flag = os.environ.get("CUPYNET_TEST_SAVE_STALL")
    if flag and point == os.environ.get("CUPYNET_TEST_SAVE_STALL_AT", "array:1") and not os.path.exists(flag):
        with open(flag, "w") as f:
            f.write(str(path))
        time.sleep(60)
