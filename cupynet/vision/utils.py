"""``torchvision.utils``' ``make_grid`` and ``save_image`` (PNG, written without an imaging library)."""

from __future__ import annotations

import math

import numpy

from cupynet import backend
from cupynet.tensor import Tensor
from cupynet.vision.image import Image

__all__ = ["make_grid", "save_image"]


def _as_batch(tensor) -> object:
    """The images as one (N, C, H, W) array (a list of Tensors is stacked; grey becomes 3 channels)."""
    if isinstance(tensor, (list, tuple)):
        if not tensor or not all(isinstance(t, Tensor) for t in tensor):
            raise TypeError("make_grid: expected a Tensor or a non-empty list of Tensors")
        xp = backend.get_array_module(tensor[0].array)
        array = xp.stack([t.array for t in tensor])
    elif isinstance(tensor, Tensor):
        array = tensor.array
    else:
        raise TypeError(f"tensor or list of tensors expected, got {type(tensor)}")
    xp = backend.get_array_module(array)
    if array.ndim == 2:
        array = array[None]
    if array.ndim == 3:
        array = array[None]
    if array.ndim != 4:
        raise ValueError(f"make_grid: expected images of shape (H, W), (C, H, W) or (N, C, H, W), got shape "
                         f"{tuple(array.shape)}")
    if array.shape[1] == 1:
        array = xp.concatenate([array] * 3, axis=1)
    return array


def _normalize(array, value_range, scale_each):
    """Map ``value_range`` (default: the min and max, of each image with ``scale_each``) onto [0, 1]."""
    xp = backend.get_array_module(array)
    array = array.astype(xp.float32) if array.dtype.kind != "f" else array.copy()
    if value_range is not None and not (isinstance(value_range, tuple) and len(value_range) == 2):
        raise TypeError("value_range has to be a tuple (min, max) if specified. min and max are numbers")
    parts = [array[i:i + 1] for i in range(len(array))] if scale_each else [array]
    for part in parts:
        low, high = value_range if value_range is not None else (float(part.min()), float(part.max()))
        # NOTE: the 1e-5 floor keeps a constant image finite (it maps to 0), as torchvision does
        part[...] = (xp.clip(part, low, high) - low) / max(high - low, 1e-5)
    return array


def make_grid(tensor, nrow=8, padding=2, normalize=False, value_range=None, scale_each=False, pad_value=0.0):
    """Tile a batch of images into one (3, H', W') image (a single image is returned as it is, 3 channels).

    Args:
        tensor: a Tensor (N, C, H, W), (C, H, W) or (H, W), or a list of (C, H, W) Tensors.
        nrow: images per row of the grid.
        padding: pixels between (and around) the images.
        normalize: map ``value_range`` (default: the batch's min..max) onto [0, 1] first.
        value_range: (low, high) for ``normalize``.
        scale_each: with ``normalize``, use each image's own min..max.
        pad_value: the value of the padding pixels.
    """
    array = _as_batch(tensor)
    if normalize:
        array = _normalize(array, value_range, scale_each)
    if array.shape[0] == 1:
        return Tensor(array[0])
    xp = backend.get_array_module(array)
    count, channels, height, width = array.shape
    across = min(nrow, count)
    down = math.ceil(count / across)
    cell_h, cell_w = height + padding, width + padding
    grid = xp.full((channels, cell_h * down + padding, cell_w * across + padding), pad_value, dtype=array.dtype)
    for k in range(count):
        top, left = (k // across) * cell_h + padding, (k % across) * cell_w + padding
        grid[:, top:top + height, left:left + width] = array[k]
    return Tensor(grid)


def save_image(tensor, fp, format=None, **kwargs):  # noqa: A002 - torchvision's name
    """Write images in [0, 1] as one PNG (``make_grid`` first when it is a batch).

    Args:
        tensor: a Tensor (or list of Tensors) as ``make_grid`` takes, values in [0, 1].
        fp: a ``.png`` path or a binary file object.
        format: "png", or None to go by the extension.
        kwargs: ``make_grid``'s options (nrow, padding, normalize, value_range, scale_each, pad_value).
    """
    grid = make_grid(tensor, **kwargs).array
    grid = backend.to_numpy(grid)
    # NOTE: x * 255 + 0.5 then truncation: round half up onto 0..255, as torchvision converts
    pixels = numpy.clip(grid.astype(numpy.float32) * 255 + 0.5, 0, 255).astype(numpy.uint8)
    Image(pixels.transpose(1, 2, 0)).save(fp, format=format)
