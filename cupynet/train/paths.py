"""The output paths of ``cupynet train`` (``--out``, ``--metrics``, ``--tensorboard``), checked before anything runs.

Each check answers in one line naming the flag, the path and what was expected, before the run's header, and
leaves the file system as it found it: whether a folder takes new files is found out by creating an empty
temporary directory (or file) in it and removing it at once, which is what a later write would need.
"""

from __future__ import annotations

import contextlib
import os
import tempfile

__all__ = ["check_output_directory", "check_output_file"]


def _nearest_existing(path):
    """``path`` itself or its closest ancestor that exists."""
    while not os.path.lexists(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


def _probe(folder, flag, shown):
    """Raise ValueError unless ``folder`` takes a new entry (an empty temp directory, removed at once)."""
    try:
        made = tempfile.mkdtemp(prefix=".cupynet-probe-", dir=folder)
    except OSError as error:
        raise ValueError(f"{flag} {shown}: cannot create anything in {folder} ({error.strerror or error}); "
                         "expected a writable directory") from None
    with contextlib.suppress(OSError):
        os.rmdir(made)


def check_output_directory(path, flag="--out"):
    """Refuse ``path`` unless it is a writable directory or one that can be made (its parents created too).

    Args:
        path: the directory asked for.
        flag: the flag that named it, for the message.
    """
    full = os.path.abspath(os.fspath(path))
    if os.path.lexists(full) and not os.path.isdir(full):
        raise ValueError(f"{flag} {path}: is a file, not a directory; expected a directory or a path that can "
                         "become one")
    existing = _nearest_existing(full)
    if not os.path.isdir(existing):
        raise ValueError(f"{flag} {path}: {existing} is a file, so the directory cannot be made inside it")
    _probe(existing, flag, path)


def check_output_file(path, flag="--metrics", made_by=None):
    """Refuse ``path`` unless it names a file that can be written: not a directory, in a writable directory.

    Args:
        path: the file asked for.
        flag: the flag that named it, for the message.
        made_by: a directory the run creates anyway (``--out``): a file inside it may be the first thing there.
    """
    full = os.path.abspath(os.fspath(path))
    if os.path.isdir(full):
        raise ValueError(f"{flag} {path}: is a directory; expected a file name, such as "
                         f"{os.path.join(os.fspath(path), 'metrics.jsonl')}")
    parent = os.path.dirname(full)
    if made_by is not None and parent == os.path.abspath(os.fspath(made_by)):
        return  # NOTE: checked as the --out directory
    if not os.path.isdir(parent):
        raise ValueError(f"{flag} {path}: directory {parent} does not exist")
    if os.path.lexists(full):
        if not os.path.isfile(full) or not os.access(full, os.W_OK):
            raise ValueError(f"{flag} {path}: exists and cannot be written; expected a writable file")
        return
    _probe(parent, flag, path)
