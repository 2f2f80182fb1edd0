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
from cupynet.ops.arith import maximum, minimum
from cupynet.ops.conv import conv2d
from cupynet.ops.indexing import flip, stack, where
from cupynet.ops.resample import interpolate
from cupynet.ops.resample import pad as _pad_op
from cupynet.tensor import Tensor
from cupynet.vision.image import Image, as_image, is_image

__all__ = ["InterpolationMode", "to_tensor", "pil_to_tensor", "to_pil_image", "normalize", "pad", "crop",
           "center_crop", "hflip", "vflip", "resize", "resized_crop", "resized_size", "get_image_size", "image_size",
           "check_tensor_image", "normalize_constants", "apply_normalize", "size_pair", "padding_ltrb",
           "check_padding_mode", "adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue",
           "rgb_to_grayscale", "to_grayscale", "gaussian_blur", "erase", "convert_image_dtype"]


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


# ---- colour: torchvision's tensor formulas; an Image goes through the uint8 tensor path -----------------------


def _as_chw(img, fn, owner):
    """``fn`` on a Tensor as is; on a picture, on its uint8 (C, H, W) Tensor, given back as an Image.

    NOTE: torchvision sends PIL images through PIL's ImageEnhance, whose uint8 rounding differs from
    its tensor path by at most one level; cupynet has one path, the tensor one (docs/differences.md).
    """
    if isinstance(img, Tensor):
        return fn(img)
    out = fn(Tensor(numpy.ascontiguousarray(as_image(img, owner).array.transpose(2, 0, 1))))
    return Image(numpy.ascontiguousarray(out.array.transpose(1, 2, 0)))


def _check_channels(img, owner, allowed=(1, 3)):
    if img.ndim < 3 or img.shape[-3] not in allowed:
        raise TypeError(f"{owner}: Input image tensor permitted channel values are {list(allowed)}, but found "
                        f"shape {tuple(img.shape)}")


def _check_factor(name, factor, low=0.0, high=None):
    if not isinstance(factor, numbers.Real) or isinstance(factor, bool) or factor < low or (
            high is not None and factor > high):
        bound = f"in [{low}, {high}]" if high is not None else "non-negative"
        raise ValueError(f"{name} ({factor!r}) is not {bound}.")


def _blend(img1, img2, ratio):
    """``ratio * img1 + (1 - ratio) * img2`` clamped to the dtype's range, in img1's dtype (uint8 truncates)."""
    bound = 1.0 if dtypes.is_floating(img1.dtype) else 255.0
    return (ratio * _float(img1) + (1.0 - ratio) * _float(img2)).clamp(0, bound).to(img1.dtype)


def _float(t):
    """An integer image as float32 before a float factor touches it.

    NOTE: torch multiplies a uint8 tensor by a Python float in float32; cupynet's mixed int * float
    promotion computes in float64 first, which moves a few truncations to uint8 by one level.
    """
    return t if dtypes.is_floating(t.dtype) else t.to(dtypes.float32)


def _grayscale(img, channels=1):
    """``0.2989 R + 0.587 G + 0.114 B`` in the image's dtype (uint8 truncates), as ``channels`` channels."""
    if img.shape[-3] == 1:
        gray = img
    else:
        r, g, b = (_float(img[..., i, :, :]) for i in range(3))
        gray = (0.2989 * r + 0.587 * g + 0.114 * b).to(img.dtype).unsqueeze(-3)
    return gray.expand(*gray.shape[:-3], channels, *gray.shape[-2:]) if channels != 1 else gray


def rgb_to_grayscale(img, num_output_channels=1):
    """The luma ``0.2989 R + 0.587 G + 0.114 B`` of an RGB picture or Tensor (..., 3, H, W).

    Args:
        img: an Image, PIL image, or Tensor (..., 1 or 3, H, W).
        num_output_channels: 1, or 3 (the grey value repeated).
    """
    if num_output_channels not in (1, 3):
        raise ValueError("num_output_channels should be either 1 or 3")

    def gray(t):
        _check_channels(t, "rgb_to_grayscale")
        return _grayscale(t, num_output_channels)
    return _as_chw(img, gray, "rgb_to_grayscale")


def to_grayscale(img, num_output_channels=1):
    """``rgb_to_grayscale`` under torchvision's older name.

    Args:
        img: an Image, PIL image, or Tensor (..., 3, H, W).
        num_output_channels: 1 or 3.
    """
    return rgb_to_grayscale(img, num_output_channels)


def _adjust(img, name, factor, blend_with):
    """``_blend(t, blend_with(t), factor)`` on the picture's tensor, after torchvision's checks.

    Args:
        img: an Image, PIL image, or Tensor (..., 1 or 3, H, W).
        name: the factor's name (``brightness_factor``, ...), for messages.
        factor: a non-negative number.
        blend_with: what the picture is blended with, from its tensor (None: leave the picture as is).
    """
    _check_factor(name, factor)

    def adjust(t):
        _check_channels(t, "adjust_" + name[:-len("_factor")])
        other = blend_with(t)
        return t if other is None else _blend(t, other, float(factor))
    return _as_chw(img, adjust, "adjust_" + name[:-len("_factor")])


def adjust_brightness(img, brightness_factor):
    """The picture times ``brightness_factor`` (0: black, 1: unchanged), clamped to the dtype's range.

    Args:
        img: an Image, PIL image, or Tensor (..., 1 or 3, H, W).
        brightness_factor: a non-negative number.
    """
    return _adjust(img, "brightness_factor", brightness_factor, lambda t: Tensor(numpy.zeros((), numpy.float32)))


def adjust_contrast(img, contrast_factor):
    """A blend with the picture's mean grey level (0: flat grey, 1: unchanged).

    Args:
        img: an Image, PIL image, or Tensor (..., 1 or 3, H, W).
        contrast_factor: a non-negative number.
    """
    def mean_grey(t):
        dtype = t.dtype if dtypes.is_floating(t.dtype) else dtypes.float32
        return _grayscale(t).to(dtype).mean(dim=(-3, -2, -1), keepdim=True)
    return _adjust(img, "contrast_factor", contrast_factor, mean_grey)


def adjust_saturation(img, saturation_factor):
    """A blend with the picture's grey version (0: grey, 1: unchanged, 2: twice as saturated).

    Args:
        img: an Image, PIL image, or Tensor (..., 1 or 3, H, W); a grey picture is returned as is.
        saturation_factor: a non-negative number.
    """
    return _adjust(img, "saturation_factor", saturation_factor, lambda t: None if t.shape[-3] == 1 else _grayscale(t))


def _rgb_to_hsv(r, g, b):
    """(h, s, v) in [0, 1] of float channels, torchvision's formulas (grey pixels: h = s = 0)."""
    maxc = maximum(maximum(r, g), b)
    minc = minimum(minimum(r, g), b)
    flat = maxc == minc
    span = maxc - minc
    s = span / where(flat, 1.0, maxc)
    divisor = where(flat, 1.0, span)
    rc, gc, bc = (maxc - r) / divisor, (maxc - g) / divisor, (maxc - b) / divisor
    is_r, is_g = maxc == r, (maxc == g) & (maxc != r)
    h = where(is_r, bc - gc, where(is_g, 2.0 + rc - bc, 4.0 + gc - rc))
    h = h / 6.0 + 1.0
    return h - h.floor(), s, maxc


def _hsv_to_rgb(h, s, v):
    """Float (r, g, b) from (h, s, v) in [0, 1]: the sector ``floor(6 h) mod 6`` picks the formula."""
    sector6 = (h * 6.0).floor()
    f = h * 6.0 - sector6
    sector = sector6 - (sector6 / 6.0).floor() * 6.0
    p = (v * (1.0 - s)).clamp(0.0, 1.0)
    q = (v * (1.0 - s * f)).clamp(0.0, 1.0)
    t = (v * (1.0 - s * (1.0 - f))).clamp(0.0, 1.0)
    table = ((v, q, p, p, t, v), (t, v, v, q, p, p), (p, p, t, v, v, q))  # NOTE: r, g, b per sector 0..5
    out = []
    for row in table:
        channel = row[5]
        for k in range(4, -1, -1):
            channel = where(sector == k, row[k], channel)
        out.append(channel)
    return out


def adjust_hue(img, hue_factor):
    """The hue turned by ``hue_factor`` of a full turn (in HSV space), saturation and value kept.

    Args:
        img: an Image, PIL image, or Tensor (..., 1 or 3, H, W); a grey picture is returned as is.
        hue_factor: a number in [-0.5, 0.5].
    """
    if not isinstance(hue_factor, numbers.Real) or not -0.5 <= hue_factor <= 0.5:
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")

    def hue(t):
        _check_channels(t, "adjust_hue")
        if t.shape[-3] == 1:
            return t
        x = t if dtypes.is_floating(t.dtype) else t.to(dtypes.float32) / 255.0
        h, s, v = _rgb_to_hsv(x[..., 0, :, :], x[..., 1, :, :], x[..., 2, :, :])
        h = h + float(hue_factor)
        out = stack(_hsv_to_rgb(h - h.floor(), s, v), -3)
        return out if dtypes.is_floating(t.dtype) else (out * 255.0).to(t.dtype)
    return _as_chw(img, hue, "adjust_hue")


# ---- blur, erasing, dtype conversion ----------------------------------------------------------------------------


def gaussian_kernel1d(size, sigma):
    """The normalised Gaussian weights at ``size`` points centred on 0 (float64 NumPy array).

    Args:
        size: an odd positive int.
        sigma: the standard deviation (> 0).
    """
    x = numpy.linspace(-(size - 1) * 0.5, (size - 1) * 0.5, size)
    pdf = numpy.exp(-0.5 * (x / sigma) ** 2)
    return pdf / pdf.sum()


def _blur_args(kernel_size, sigma):
    """(kx, ky) and (sx, sy) checked as torchvision checks them; sigma None: ``0.15 k + 0.35``."""
    ks = [kernel_size, kernel_size] if isinstance(kernel_size, int) else list(kernel_size)
    if len(ks) == 1:
        ks = ks * 2
    if len(ks) != 2 or not all(isinstance(k, int) and k > 0 and k % 2 == 1 for k in ks):
        raise ValueError(f"kernel_size should have odd and positive integers, got {kernel_size!r}")
    if sigma is None:
        sig = [k * 0.15 + 0.35 for k in ks]
    else:
        sig = [float(sigma)] * 2 if isinstance(sigma, numbers.Real) else [float(v) for v in sigma]
        sig = sig * 2 if len(sig) == 1 else sig
    if len(sig) != 2 or any(v <= 0 for v in sig):
        raise ValueError(f"sigma should have positive values, got {sigma!r}")
    return ks, sig


def gaussian_blur(img, kernel_size, sigma=None):
    """A Gaussian blur: reflect padding by half the kernel, then one depthwise 2-D convolution.

    A uint8 picture is blurred in float32 and rounded half to even back to uint8, as torchvision.

    Args:
        img: an Image, PIL image, or Tensor (..., C, H, W).
        kernel_size: an odd int, or (kx, ky) (width first, torchvision's order).
        sigma: a positive number or (sx, sy); None: ``0.15 k + 0.35`` per direction.
    """
    (kx, ky), (sx, sy) = _blur_args(kernel_size, sigma)

    def blur(t):
        dtype = t.dtype if dtypes.is_floating(t.dtype) else dtypes.float32
        kernel = numpy.outer(gaussian_kernel1d(ky, sy), gaussian_kernel1d(kx, sx))
        c = t.shape[-3]
        weight = _as_tensor(numpy.broadcast_to(kernel, (c, 1, ky, kx)).copy(), dtype=dtype, device=t.device)
        x = t.reshape(-1, c, *t.shape[-2:]).to(dtype)
        x = _pad_op(x, (kx // 2, kx // 2, ky // 2, ky // 2), mode="reflect")
        out = conv2d(x, weight, groups=c).reshape(t.shape)
        return out if dtypes.is_floating(t.dtype) else out.round().to(t.dtype)
    return _as_chw(img, blur, "gaussian_blur")


def erase(img, i, j, h, w, v, inplace=False):
    """The Tensor with its window (``i``, ``j``, ``h``, ``w``) set to ``v`` (a number or a broadcastable Tensor).

    Args:
        img: a Tensor (..., C, H, W).
        i: first row.
        j: first column.
        h: rows.
        w: columns.
        v: the value(s) written.
        inplace: write into ``img`` itself.
    """
    if not isinstance(img, Tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(img)}")
    out = img if inplace else img.clone()
    out[..., i:i + h, j:j + w] = v
    return out


def convert_image_dtype(image, dtype=dtypes.float32):
    """An image Tensor in another dtype, values rescaled: integers span [0, max], floats [0, 1].

    Args:
        image: a Tensor (..., C, H, W).
        dtype: the target dtype (a float dtype, or an integer one from a float image).
    """
    if not isinstance(image, Tensor):
        raise TypeError(f"Input img should be Tensor Image. Got {type(image)}")
    dtype = dtypes.as_dtype(dtype)
    if image.dtype == dtype:
        return image
    src_float, dst_float = dtypes.is_floating(image.dtype), dtypes.is_floating(dtype)
    if src_float and dst_float:
        return image.to(dtype)
    if not src_float and dst_float:
        return image.to(dtype) / float(numpy.iinfo(image.dtype).max)
    if src_float:
        if image.dtype == dtypes.float32 and dtype in (dtypes.int32, dtypes.int64) or (
                image.dtype == dtypes.float64 and dtype == dtypes.int64):
            raise RuntimeError(f"The cast from {image.dtype} to {dtype} cannot be performed safely.")
        # NOTE: torchvision's scale by (max + 1 - 1e-3) then truncation: 1.0 maps to max, each level gets an
        # equal share of [0, 1]
        return (image * (numpy.iinfo(dtype).max + 1.0 - 1e-3)).to(dtype)
    raise NotImplementedError(f"convert_image_dtype: integer to integer ({image.dtype} -> {dtype}) is not supported "
                              "in cupynet; go through a float dtype")
