"""``Image``: the PIL-free picture that cupynet's datasets hand to transforms.

torchvision's datasets give ``PIL.Image`` objects and its transforms accept them. cupynet
depends on no imaging library, so a dataset item is an ``Image``: a uint8 NumPy array in
height x width x channels order (HWC, what ``numpy.asarray(pil_image)`` gives) plus PIL's
``mode`` ("L" grey, "RGB", "RGBA"). It answers the questions transforms and user code ask
of a PIL image (``size`` as (width, height), ``mode``, ``numpy.asarray(img)``) and nothing
more. A real ``PIL.Image`` (or a uint8 HWC/HW array) is accepted wherever an ``Image`` is:
``as_image`` converts it without importing PIL.
"""

from __future__ import annotations

import os
import struct
import zlib

import numpy

__all__ = ["Image", "as_image", "is_image", "encode_png"]

_MODES = {1: "L", 3: "RGB", 4: "RGBA"}


class Image:
    """A uint8 picture, HWC in memory, with PIL's ``size`` / ``mode`` answers.

    Args:
        array: uint8 array of shape (H, W) (grey, mode "L") or (H, W, C) with C = 1, 3 or 4.
    """

    def __init__(self, array):
        array = numpy.asarray(array)
        if array.dtype != numpy.uint8:
            raise TypeError(f"Image: expected a uint8 array, got dtype {array.dtype}")
        if array.ndim == 2:
            array = array[:, :, None]
        if array.ndim != 3 or array.shape[2] not in _MODES:
            raise ValueError(f"Image: expected an array of shape (H, W) or (H, W, C) with C in 1, 3, 4, got "
                             f"shape {tuple(array.shape)}")
        self.array = array

    @classmethod
    def fromarray(cls, array, mode=None):
        """An ``Image`` from a uint8 array, as ``PIL.Image.fromarray``.

        Args:
            array: uint8 array (H, W) or (H, W, C).
            mode: "L", "RGB" or "RGBA", checked against the channel count when given.
        """
        image = cls(array)
        if mode is not None and mode != image.mode:
            raise ValueError(f"Image.fromarray: mode {mode!r} does not match an array of shape "
                             f"{tuple(numpy.shape(array))} (mode {image.mode!r})")
        return image

    @property
    def mode(self) -> str:
        """PIL's mode name: "L", "RGB" or "RGBA"."""
        return _MODES[self.array.shape[2]]

    @property
    def size(self) -> tuple:
        """``(width, height)``, PIL's order."""
        return self.array.shape[1], self.array.shape[0]

    @property
    def width(self) -> int:
        """Number of columns."""
        return self.array.shape[1]

    @property
    def height(self) -> int:
        """Number of rows."""
        return self.array.shape[0]

    def __array__(self, dtype=None, copy=None):
        # NOTE: a grey image reads as (H, W), an RGB one as (H, W, 3): what numpy.asarray(pil_image) gives
        array = self.array[:, :, 0] if self.mode == "L" else self.array
        if copy:
            array = array.copy()
        return array if dtype is None else array.astype(dtype, copy=False)

    def copy(self) -> Image:
        """A copy that owns its pixels."""
        return Image(self.array.copy())

    def save(self, fp, format=None):  # noqa: A002 - PIL's name
        """Write the picture as a PNG file (8-bit grey, RGB or RGBA; the only format cupynet writes).

        Args:
            fp: a path, or a binary file object.
            format: "png", or None to go by the path's extension (which must then be ``.png``).
        """
        name = os.fspath(fp) if isinstance(fp, (str, os.PathLike)) else None
        fmt = (format or (os.path.splitext(name)[1][1:] if name else "")).lower()
        if fmt != "png":
            raise ValueError(f"Image.save: cupynet writes PNG only (it has no imaging library), got format "
                             f"{format!r} for {fp!r}; use a .png name or format='png'")
        data = encode_png(self.array)
        if name is None:
            fp.write(data)
        else:
            with open(name, "wb") as f:
                f.write(data)

    def __eq__(self, other):
        return isinstance(other, Image) and numpy.array_equal(self.array, other.array)

    __hash__ = None

    def __repr__(self):
        return f"<cupynet.vision.Image mode={self.mode} size={self.width}x{self.height}>"


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def encode_png(array) -> bytes:
    """The bytes of a PNG file holding a uint8 (H, W, C) array, C = 1 (grey), 3 (RGB) or 4 (RGBA).

    Args:
        array: the pixels, HWC uint8.
    """
    height, width, channels = array.shape
    color_type = {1: 0, 3: 2, 4: 6}[channels]
    header = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    # NOTE: each scanline starts with its filter byte; 0 = "None": the row's bytes as they are
    rows = numpy.concatenate([numpy.zeros((height, 1), numpy.uint8),
                              numpy.ascontiguousarray(array).reshape(height, width * channels)], axis=1)
    return (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", header) + _png_chunk(b"IDAT", zlib.compress(rows.tobytes()))
            + _png_chunk(b"IEND", b""))


def is_image(obj) -> bool:
    """Whether ``obj`` is an ``Image`` or a PIL image (recognised without importing PIL).

    Args:
        obj: any object.
    """
    return isinstance(obj, Image) or (type(obj).__module__.startswith("PIL.") and hasattr(obj, "mode"))


def as_image(obj, owner: str) -> Image:
    """``obj`` as an ``Image``: an Image as is, a PIL image or a uint8 HWC/HW NumPy array converted.

    Args:
        obj: the picture.
        owner: the caller's name, for the error message.
    """
    if isinstance(obj, Image):
        return obj
    if is_image(obj):
        if obj.mode not in _MODES.values():
            raise ValueError(f"{owner}: PIL mode {obj.mode!r} is not supported; expected 'L', 'RGB' or 'RGBA'")
        return Image(numpy.asarray(obj))
    if isinstance(obj, numpy.ndarray) and obj.dtype == numpy.uint8:
        return Image(obj)
    raise TypeError(f"{owner}: expected an Image (or a PIL image, or a uint8 HWC numpy array), got "
                    f"{type(obj).__name__}")
