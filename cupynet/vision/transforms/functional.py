"""``torchvision.transforms.functional``: the picture operations the transform classes are made of.

Each takes an ``Image`` (``cupynet.vision.image``: uint8 HWC with PIL's answers), a PIL image,
or a Tensor (..., C, H, W), and gives back the same kind. On a Tensor the operations are cupynet
ops (slicing, ``flip``, ``F.pad``, ``F.interpolate``, arithmetic), so they keep autograd history
as torchvision's tensor functions do.
"""

from __future__ import annotations

import enum
import numbers
import warnings

import numpy

from cupynet import dtypes
from cupynet.creation import tensor as _as_tensor
from cupynet.ops.indexing import flip
from cupynet.ops.resample import interpolate
from cupynet.ops.resample import pad as _pad_op
from cupynet.tensor import Tensor
from cupynet.vision.image import Image, as_image, is_image

__all__ = ["InterpolationMode", "to_tensor", "pil_to_tensor", "to_pil_image", "normalize", "pad", "crop",
           "center_crop", "hflip", "vflip", "resize", "resized_crop", "resized_size", "get_image_size", "image_size",
           "check_tensor_image", "normalize_constants", "apply_normalize", "size_pair", "padding_ltrb",
           "check_padding_mode"]


class InterpolationMode(enum.Enum):
    """How ``Resize`` samples: the modes of ``F.interpolate`` that torchvision names."""

    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"


# ---- picture <-> Tensor ---------------------------------------------------------------------------------


def to_tensor(pic):
    """A picture as a CPU Tensor (C, H, W): uint8 values divided by 255 in the default float dtype.

    Args:
        pic: an ``Image``, a PIL image, or a NumPy array (H, W) / (H, W, C); an array of another dtype than
            uint8 is only moved to channels-first, as torchvision does.
    """
    if is_image(pic):
        pic = as_image(pic, "to_tensor").array
    elif not isinstance(pic, numpy.ndarray):
        raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
    if pic.ndim not in (2, 3):
        raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
    chw = numpy.ascontiguousarray((pic[:, :, None] if pic.ndim == 2 else pic).transpose(2, 0, 1))
    if chw.dtype == numpy.uint8:
        # NOTE: x / 255 in the float dtype, rounded once: torchvision's div(255), bit for bit
        dtype = dtypes.get_default_dtype()
        chw = chw.astype(dtype) / numpy.asarray(255, dtype=dtype)
    return Tensor(chw)


def pil_to_tensor(pic):
    """A picture as a CPU uint8 Tensor (C, H, W), values unchanged.

    Args:
        pic: an ``Image`` or a PIL image (or a uint8 HWC array).
    """
    return Tensor(numpy.ascontiguousarray(as_image(pic, "pil_to_tensor").array.transpose(2, 0, 1)))


def to_pil_image(pic, mode=None):
    """A Tensor (C, H, W) / (H, W) or NumPy array (H, W, C) / (H, W) as an ``Image`` (cupynet's PIL stand-in).

    A float picture is taken as [0, 1] and becomes ``uint8(x * 255)`` (truncated, as torchvision does).

    Args:
        pic: the picture: 1 (grey), 3 (RGB) or 4 (RGBA) channels.
        mode: "L", "RGB" or "RGBA", checked against the channel count when given.
    """
    if isinstance(pic, Tensor):
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        array = numpy.asarray(pic.detach().cpu().array)
        array = array[:, :, None] if array.ndim == 2 else array.transpose(1, 2, 0)
    elif isinstance(pic, numpy.ndarray):
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        array = pic[:, :, None] if pic.ndim == 2 else pic
    else:
        raise TypeError(f"pic should be Tensor or ndarray. Got {type(pic)}.")
    if array.dtype.kind == "f":
        array = (array * 255).astype(numpy.uint8)
    return Image.fromarray(numpy.ascontiguousarray(array), mode=mode)


def check_tensor_image(tensor):
    """Raise unless ``tensor`` is a float Tensor (..., C, H, W) (torchvision's messages).

    Args:
        tensor: the input.
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(tensor)}")
    if not dtypes.is_floating(tensor.dtype):
        raise TypeError(f"Input tensor should be a float tensor. Got {tensor.dtype}.")
    if tensor.ndim < 3:
        raise ValueError(f"Expected tensor to be a tensor image of size (..., C, H, W). Got tensor.size() = "
                         f"{tuple(tensor.shape)}")


def normalize_constants(mean, std, tensor) -> tuple:
    """``mean`` and ``std`` as (C, 1, 1) Tensors of the input's dtype and device, checked.

    Args:
        mean: one value per channel, or one for all.
        std: one value per channel, or one for all; none may be zero (after the cast).
        tensor: the image tensor (..., C, H, W) they will normalise.
    """
    mean, std = _per_channel(mean, tensor, "mean"), _per_channel(std, tensor, "std")
    if not bool((std.array != 0).all()):
        raise ValueError(f"std evaluated to zero after conversion to {tensor.dtype}, leading to division by zero.")
    return mean, std


def _per_channel(values, tensor, name) -> Tensor:
    values = numpy.atleast_1d(numpy.asarray(values, dtype=numpy.float64))
    channels = tensor.shape[-3]
    if values.ndim != 1 or values.size not in (1, channels):
        raise ValueError(f"Normalize: {name} has {values.size} values for a tensor with {channels} channels "
                         f"(shape {tuple(tensor.shape)}); expected 1 or {channels}")
    return _as_tensor(values.reshape(-1, 1, 1), dtype=tensor.dtype, device=tensor.device)


def normalize(tensor, mean, std, inplace=False):
    """``(x - mean) / std`` per channel of a float Tensor (..., C, H, W).

    Args:
        tensor: the image tensor.
        mean: one mean per channel (or one for all).
        std: one standard deviation per channel (or one for all); none may be zero.
        inplace: change ``tensor`` in place (``sub_`` / ``div_``).
    """
    check_tensor_image(tensor)
    return apply_normalize(tensor, *normalize_constants(mean, std, tensor), inplace)


def apply_normalize(tensor, mean, std, inplace):
    """``(tensor - mean) / std`` with checked (C, 1, 1) constants.

    Args:
        tensor: the image tensor.
        mean: (C, 1, 1) Tensor.
        std: (C, 1, 1) Tensor.
        inplace: change ``tensor`` in place.
    """
    if inplace:
        return tensor.sub_(mean).div_(std)
    if not tensor.requires_grad:
        # NOTE: nothing to record: the same two array operations without the graph machinery, which
        # costs more than the arithmetic on one small picture (the DataLoader calls this per sample)
        return Tensor((tensor.array - mean.array) / std.array)
    return (tensor - mean) / std


# ---- geometry: sizes, padding, crops, flips ---------------------------------------------------------------


def size_pair(size, owner) -> tuple:
    """``size`` as (h, w): an int is square, a 1-sequence too.

    Args:
        size: an int, or a sequence of 1 or 2 positive ints.
        owner: the caller's name, for the error message.
    """
    if isinstance(size, numbers.Integral) and not isinstance(size, bool):
        size = (int(size), int(size))
    elif isinstance(size, (tuple, list)) and len(size) == 1:
        size = (size[0], size[0])
    if not (isinstance(size, (tuple, list)) and len(size) == 2):
        raise ValueError("Please provide only two dimensions (h, w) for size.")
    if not all(isinstance(s, numbers.Integral) and not isinstance(s, bool) and s > 0 for s in size):
        raise ValueError(f"{owner}: size must be positive ints, got {tuple(size)}")
    return int(size[0]), int(size[1])


def padding_ltrb(padding) -> tuple:
    """Padding as (left, top, right, bottom): an int on every side, (lr, tb), or all four.

    Args:
        padding: an int, or a sequence of 1, 2 or 4 non-negative ints.
    """
    if isinstance(padding, numbers.Integral) and not isinstance(padding, bool):
        padding = (padding,)
    if not isinstance(padding, (tuple, list)) or len(padding) not in (1, 2, 4):
        count = f"a {len(padding)} element tuple" if isinstance(padding, (tuple, list)) else type(padding).__name__
        raise ValueError(f"Padding must be an int or a 1, 2, or 4 element tuple, not {count}")
    if not all(isinstance(p, numbers.Integral) and not isinstance(p, bool) and p >= 0 for p in padding):
        raise ValueError(f"Padding must be non-negative ints, got {tuple(padding)}")
    if len(padding) == 1:
        return (int(padding[0]),) * 4
    if len(padding) == 2:
        return int(padding[0]), int(padding[1]), int(padding[0]), int(padding[1])
    return tuple(int(p) for p in padding)


def image_size(img) -> tuple:
    """``(height, width)`` of a picture or of a Tensor (..., H, W).

    Args:
        img: an Image, PIL image or Tensor.
    """
    if isinstance(img, Tensor):
        if img.ndim < 2:
            raise ValueError(f"expected a tensor image of shape (..., H, W), got shape {tuple(img.shape)}")
        return int(img.shape[-2]), int(img.shape[-1])
    image = as_image(img, "transforms")
    return image.height, image.width


_PAD_MODES = {"constant": "constant", "edge": "edge", "reflect": "reflect", "symmetric": "symmetric"}


def check_padding_mode(mode):
    """Raise unless ``mode`` is one of torchvision's four padding modes.

    Args:
        mode: the padding mode.
    """
    if mode not in _PAD_MODES:
        raise ValueError(f"Padding mode should be either constant, edge, reflect or symmetric, got {mode!r}")


def pad(img, padding, fill=0, padding_mode="constant"):
    """Pad a picture or Tensor on its (H, W) sides.

    Args:
        img: an Image, PIL image, or Tensor (..., H, W).
        padding: an int, (left/right, top/bottom) or (left, top, right, bottom).
        fill: the value of "constant" padding (a number; for an Image also one per channel).
        padding_mode: "constant", "edge" (repeat the border), "reflect" (mirror without the border
            pixel) or "symmetric" (mirror with it).
    """
    check_padding_mode(padding_mode)
    left, top, right, bottom = padding_ltrb(padding)
    if isinstance(img, Tensor):
        return _pad_tensor(img, (left, top, right, bottom), fill, padding_mode)
    array = as_image(img, "pad").array
    if padding_mode != "constant":
        return Image(numpy.pad(array, ((top, bottom), (left, right), (0, 0)), mode=padding_mode))
    height, width, channels = array.shape
    fill = numpy.broadcast_to(numpy.asarray(fill, dtype=numpy.uint8), (channels,))
    out = numpy.empty((height + top + bottom, width + left + right, channels), dtype=numpy.uint8)
    out[...] = fill
    out[top:top + height, left:left + width] = array
    return Image(out)


def _pad_tensor(img, ltrb, fill, mode):
    left, top, right, bottom = ltrb
    if mode == "constant":
        if not isinstance(fill, numbers.Number):
            raise TypeError(f"pad: a tensor's fill must be a number, got {type(fill).__name__}")
        return _pad_op(img, (left, right, top, bottom), value=fill)
    # NOTE: the other modes gather rows then columns by an index map that numpy.pad builds on arange,
    # so edge/reflect/symmetric mean exactly what they mean for an Image, and the gather keeps history.
    height, width = image_size(img)
    rows = numpy.pad(numpy.arange(height), (top, bottom), mode=mode)
    cols = numpy.pad(numpy.arange(width), (left, right), mode=mode)
    return img[..., rows, :][..., cols]


def crop(img, top, left, height, width):
    """The ``height`` x ``width`` window at (``top``, ``left``) of a picture or Tensor (inside the picture).

    Args:
        img: an Image, PIL image, or Tensor (..., H, W).
        top: first row.
        left: first column.
        height: rows kept.
        width: columns kept.
    """
    h, w = image_size(img)
    if top < 0 or left < 0 or top + height > h or left + width > w:
        raise ValueError(f"crop: window top={top}, left={left}, {height}x{width} is outside the image of size "
                         f"{(h, w)}")
    if isinstance(img, Tensor):
        return img[..., top:top + height, left:left + width]
    return Image(as_image(img, "crop").array[top:top + height, left:left + width])


def hflip(img):
    """A picture or Tensor mirrored left to right.

    Args:
        img: an Image, PIL image, or Tensor (..., H, W).
    """
    if isinstance(img, Tensor):
        return flip(img, [-1])
    return Image(numpy.ascontiguousarray(as_image(img, "hflip").array[:, ::-1]))


def vflip(img):
    """A picture or Tensor mirrored top to bottom.

    Args:
        img: an Image, PIL image, or Tensor (..., H, W).
    """
    if isinstance(img, Tensor):
        return flip(img, [-2])
    return Image(numpy.ascontiguousarray(as_image(img, "vflip").array[::-1]))


def center_crop(img, output_size):
    """The window of ``output_size`` at the centre (a smaller picture is zero-padded around first).

    Args:
        img: an Image, PIL image, or Tensor (..., H, W).
        output_size: (h, w), or an int for a square.
    """
    th, tw = size_pair(output_size, "center_crop")
    h, w = image_size(img)
    if th > h or tw > w:
        # NOTE: the odd pixel of padding goes right/bottom, as torchvision places it
        dw, dh = max(tw - w, 0), max(th - h, 0)
        img = pad(img, (dw // 2, dh // 2, (dw + 1) // 2, (dh + 1) // 2))
        h, w = image_size(img)
    # NOTE: round() halves to even: the offset of an odd margin is torchvision's int(round(margin / 2))
    return crop(img, int(round((h - th) / 2.0)), int(round((w - tw) / 2.0)), th, tw)


def get_image_size(img) -> list:
    """``[width, height]`` of a picture or Tensor (torchvision's order for this function).

    Args:
        img: an Image, PIL image, or Tensor (..., H, W).
    """
    h, w = image_size(img)
    return [w, h]


# ---- resizing ------------------------------------------------------------------------------------------


def resized_size(h, w, size, max_size=None) -> tuple:
    """The (h, w) ``Resize(size)`` gives an h x w picture: an int sets the shorter side, keeping the aspect.

    Args:
        h: input height.
        w: input width.
        size: an int (shorter side), or (h, w).
        max_size: with an int ``size``, the longer side's bound (it is shrunk to fit, aspect kept).
    """
    if not isinstance(size, numbers.Integral):
        return tuple(size)
    short, long = (w, h) if w <= h else (h, w)
    new_short, new_long = int(size), int(size * long / short)
    if max_size is not None:
        if max_size <= size:
            raise ValueError(f"max_size = {max_size} must be strictly greater than the requested size for the "
                             f"smaller edge size = {size}")
        if new_long > max_size:
            new_short, new_long = int(max_size * new_short / new_long), max_size
    return (new_long, new_short) if w <= h else (new_short, new_long)


def resize(img, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
    """A picture or Tensor resampled to ``size`` with ``F.interpolate`` (align_corners=False).

    A uint8 input is resampled in float32 and rounded half to even back to uint8 (bicubic clipped
    to 0..255), as torchvision treats uint8 tensors.

    NOTE: cupynet has no antialiasing filter: ``antialias=True`` (torchvision's default) only matters
    when shrinking, where cupynet samples as torchvision does with ``antialias=False`` and warns.

    Args:
        img: an Image, PIL image, or Tensor (..., H, W).
        size: an int (shorter side) or (h, w).
        interpolation: an ``InterpolationMode`` (or its string value).
        max_size: the longer side's bound when ``size`` is an int.
        antialias: torchvision's antialiasing switch (see the note).
    """
    mode = InterpolationMode(interpolation).value
    h, w = image_size(img)
    out = resized_size(h, w, size, max_size)
    if out == (h, w):
        return img
    if antialias and (out[0] < h or out[1] < w) and mode in ("bilinear", "bicubic"):
        warnings.warn("Resize: cupynet has no antialiasing filter; shrinking samples as torchvision's "
                      "antialias=False does", UserWarning, stacklevel=3)
    if isinstance(img, Tensor):
        return _resize_tensor(img, out, mode)
    chw = Tensor(numpy.ascontiguousarray(as_image(img, "resize").array.transpose(2, 0, 1)))
    return Image(_resize_tensor(chw, out, mode).array.transpose(1, 2, 0))


def resized_crop(img, top, left, height, width, size, interpolation=InterpolationMode.BILINEAR, antialias=True):
    """``crop`` then ``resize`` to ``size``.

    Args:
        img: an Image, PIL image, or Tensor (..., H, W).
        top: first row of the window.
        left: first column of the window.
        height: rows of the window.
        width: columns of the window.
        size: the output (h, w), or an int (shorter side).
        interpolation: an ``InterpolationMode``.
        antialias: torchvision's switch (see ``resize``).
    """
    return resize(crop(img, top, left, height, width), size, interpolation, antialias=antialias)


def _resize_tensor(img, out, mode):
    lead = tuple(img.shape[:-2])
    x = img.reshape(1, -1, *img.shape[-2:])
    is_uint8 = x.dtype == dtypes.uint8
    if not dtypes.is_floating(x.dtype):
        x = x.float()
    corners = None if mode.startswith("nearest") else False
    y = interpolate(x, size=out, mode=mode, align_corners=corners)
    if is_uint8:
        y = (y.clamp(0, 255) if mode == "bicubic" else y).round().to(dtypes.uint8)
    return y.reshape(*lead, *out)
