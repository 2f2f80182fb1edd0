"""``torch.hub`` for ``cupynet run``: its download helpers (``download_url_to_file``, ``get_dir``, ``set_dir``,
``load_state_dict_from_url``).

Programs call ``torch.hub.download_url_to_file`` to fetch assets (fonts, weights, data) whatever the model.
Here it downloads with the standard library as torch does: into a temporary file beside ``dst``, checks the
SHA-256 prefix when one is given, then moves the file into place, so an interrupted or corrupt download never
leaves a file at ``dst``. ``torch.hub.load`` (a model from a GitHub repository's hubconf.py) is not here:
reading it reports the name missing.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import urllib.request

__all__ = ["download_url_to_file", "get_dir", "set_dir", "load_state_dict_from_url"]

_CHUNK = 8192
_hub_dir: str | None = None


def _torch_home() -> str:
    """torch's cache root: ``$TORCH_HOME``, else ``$XDG_CACHE_HOME/torch``, else ``~/.cache/torch``."""
    cache = os.getenv("XDG_CACHE_HOME", os.path.join("~", ".cache"))
    return os.path.expanduser(os.getenv("TORCH_HOME", os.path.join(cache, "torch")))


def get_dir() -> str:
    """``torch.hub.get_dir``: the hub cache folder (``set_dir``'s, else ``<torch home>/hub``)."""
    return _hub_dir if _hub_dir is not None else os.path.join(_torch_home(), "hub")


def set_dir(d) -> None:
    """``torch.hub.set_dir``: the folder later downloads are cached in.

    Args:
        d: the folder (a string or ``os.PathLike``); ``~`` is expanded as torch does.
    """
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


def download_url_to_file(url: str, dst, hash_prefix: str | None = None, progress: bool = True) -> None:
    """``torch.hub.download_url_to_file``: fetch ``url`` into the file ``dst``.

    Args:
        url: the address (any scheme ``urllib`` opens: https, http, file).
        dst: the file to write (a string or ``os.PathLike``); its folder must exist.
        hash_prefix: when given, the SHA-256 hex digest of the download must start with it, else a
            ``RuntimeError`` and ``dst`` is left as it was.
        progress: show a progress bar (tqdm) on stderr.
    """
    dst = os.path.expanduser(os.fspath(dst))
    request = urllib.request.Request(url, headers={"User-Agent": "torch.hub"})
    sha256 = hashlib.sha256() if hash_prefix is not None else None
    # NOTE: the temporary file sits in dst's folder so the final move is a rename on the same file system
    tmp = tempfile.NamedTemporaryFile(delete=False, dir=os.path.dirname(os.path.abspath(dst)), suffix=".partial")
    try:
        with urllib.request.urlopen(request) as response, tmp:
            _copy_response(response, tmp, sha256, progress)
        if sha256 is not None and not sha256.hexdigest().startswith(hash_prefix):
            raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{sha256.hexdigest()}")')
        shutil.move(tmp.name, dst)
    finally:
        if os.path.exists(tmp.name):
            os.remove(tmp.name)


def _copy_response(response, out, sha256, progress: bool) -> None:
    """Copy ``response`` into ``out`` a chunk at a time, feeding ``sha256`` and a progress bar when asked.

    The bar is tqdm's (an optional package, as for torch.hub); without tqdm the download runs without one.
    """
    length = response.headers.get("Content-Length") if response.headers is not None else None
    total = int(length) if length else None
    with _progress_bar(total, progress) as bar:
        while chunk := response.read(_CHUNK):
            out.write(chunk)
            if sha256 is not None:
                sha256.update(chunk)
            bar.update(len(chunk))


class _NoBar:
    """Stands in for a tqdm bar when none is shown."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def update(self, n):
        """Ignore progress.

        Args:
            n: bytes done.
        """


def _progress_bar(total, progress: bool):
    if not progress:
        return _NoBar()
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoBar()
    return tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024)


def load_state_dict_from_url(url: str, model_dir=None, map_location=None, progress: bool = True,
                             check_hash: bool = False, file_name: str | None = None, weights_only: bool = False):
    """``torch.hub.load_state_dict_from_url``: download once into the cache, then ``load`` the file.

    Args:
        url: the address of the saved object.
        model_dir: the cache folder (default ``<hub dir>/checkpoints``).
        map_location: passed to ``cupynet.load``.
        progress: show a progress bar while downloading.
        check_hash: the file name's part after its first ``-`` (``name-<hash>.pt``) must begin the
            file's SHA-256 digest, as in torch.
        file_name: the cached file's name (default: the URL's last path part).
        weights_only: passed to ``cupynet.load``.
    """
    import re
    import urllib.parse

    from cupynet.serialization import load

    model_dir = os.fspath(model_dir) if model_dir is not None else os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name or os.path.basename(urllib.parse.urlparse(url).path)
    cached = os.path.join(model_dir, filename)
    if not os.path.exists(cached):
        match = re.search(r"-([a-f0-9]*)\.", filename) if check_hash else None
        download_url_to_file(url, cached, match.group(1) if match else None, progress=progress)
    return load(cached, map_location=map_location, weights_only=weights_only)
