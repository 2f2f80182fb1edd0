"""``torchvision.transforms``' everyday names, on cupynet ``Image``s (or PIL images) and Tensors.

A picture transform takes an ``Image`` (``cupynet.vision.image``: uint8 HWC, PIL's answers),
a PIL image, or a Tensor of shape (..., C, H, W), and gives back the same kind. On a Tensor
the geometric transforms are cupynet ops (slicing, ``flip``, ``F.pad``, ``F.interpolate``),
so they keep autograd history as torchvision's tensor transforms do.

Randomness (``RandomCrop``'s offset, ``RandomHorizontalFlip``'s coin) is drawn from
cupynet's CPU generator, so ``cupynet.manual_seed`` (``torch.manual_seed`` under
``cupynet run``) makes a pipeline repeatable; the draws are not torch's bit for bit.
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
from cupynet.random import cpu_generator
from cupynet.tensor import Tensor
from cupynet.vision.image import Image, as_image, is_image

__all__ = ["Compose", "ToTensor", "PILToTensor", "Normalize", "Lambda", "Pad", "RandomCrop", "CenterCrop",
           "RandomHorizontalFlip", "RandomVerticalFlip", "Resize", "InterpolationMode"]


class InterpolationMode(enum.Enum):
    """How ``Resize`` samples: the modes of ``F.interpolate`` that torchvision names."""

    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"


class Compose:
    """Apply transforms one after another.

    Args:
        transforms: a list of callables.
    """

    def __init__(self, transforms):
        self.transforms = list(transforms)
        for t in self.transforms:
            if not callable(t):
                raise TypeError(f"Compose: every transform must be callable, got {type(t).__name__}")

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self):
        return type(self).__name__ + "(" + "".join(f"\n    {t}" for t in self.transforms) + "\n)"


class _Transform:
    """Base of the transforms below: the repr lists the constructor's settings (``_repr_fields``)."""

    _repr_fields = ()

    def __repr__(self):
        fields = ", ".join(f"{name}={getattr(self, name)}" for name in self._repr_fields)
        return f"{type(self).__name__}({fields})"


class Lambda(_Transform):
    """A user function as a transform.

    Args:
        lambd: the function, called with the picture.
    """

    def __init__(self, lambd):
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {type(lambd).__name__!r}")
        self.lambd = lambd

    def __call__(self, img):
        return self.lambd(img)


# ---- picture <-> Tensor ---------------------------------------------------------------------------------


class ToTensor(_Transform):
    """A picture as a CPU float32 Tensor (C, H, W) in [0, 1]: uint8 values divided by 255.

    An ``Image`` or PIL image, or a NumPy array (H, W) / (H, W, C): a uint8 array is scaled to
    [0, 1] in the default float dtype, any other dtype is only moved to channels-first, as torchvision does.
    """

    def __call__(self, pic):
        if is_image(pic):
            pic = as_image(pic, "ToTensor").array
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


class PILToTensor(_Transform):
    """A picture as a CPU uint8 Tensor (C, H, W), values unchanged."""

    def __call__(self, pic):
        return Tensor(numpy.ascontiguousarray(as_image(pic, "PILToTensor").array.transpose(2, 0, 1)))


class Normalize(_Transform):
    """``(x - mean) / std`` per channel of a float Tensor (..., C, H, W).

    Args:
        mean: one mean per channel (or one for all).
        std: one standard deviation per channel (or one for all); none may be zero.
        inplace: change the input tensor in place (``sub_`` / ``div_``) instead of making a new one.
    """

    _repr_fields = ("mean", "std")

    def __init__(self, mean, std, inplace=False):
        self.mean, self.std, self.inplace = mean, std, inplace
        self._constants = {}

    def __call__(self, tensor):
        if not isinstance(tensor, Tensor):
            raise TypeError(f"img should be Tensor Image. Got {type(tensor)}")
        if not dtypes.is_floating(tensor.dtype):
            raise TypeError(f"Input tensor should be a float tensor. Got {tensor.dtype}.")
        if tensor.ndim < 3:
            raise ValueError(f"Expected tensor to be a tensor image of size (..., C, H, W). Got tensor.size() = "
                             f"{tuple(tensor.shape)}")
        mean, std = self._mean_std(tensor)
        if self.inplace:
            return tensor.sub_(mean).div_(std)
        if not tensor.requires_grad:
            # NOTE: nothing to record: the same two array operations without the graph machinery, which
            # costs more than the arithmetic on one small picture (the DataLoader calls this per sample)
            return Tensor((tensor.array - mean.array) / std.array)
        return (tensor - mean) / std

    def _mean_std(self, tensor) -> tuple:
        """mean and std as (C, 1, 1) tensors of the input's dtype and device, made (and checked) once each."""
        key = (tensor.dtype, str(tensor.device), tensor.shape[-3])
        if key not in self._constants:
            mean = self._per_channel(self.mean, tensor, "mean")
            std = self._per_channel(self.std, tensor, "std")
            if not bool((std.array != 0).all()):
                raise ValueError(f"std evaluated to zero after conversion to {tensor.dtype}, leading to division "
                                 "by zero.")
            self._constants[key] = mean, std
        return self._constants[key]

    def __getstate__(self):
        return {**self.__dict__, "_constants": {}}  # NOTE: worker processes remake their own constants

    @staticmethod
    def _per_channel(values, tensor, name) -> Tensor:
        values = numpy.atleast_1d(numpy.asarray(values, dtype=numpy.float64))
        channels = tensor.shape[-3]
        if values.ndim != 1 or values.size not in (1, channels):
            raise ValueError(f"Normalize: {name} has {values.size} values for a tensor with {channels} channels "
                             f"(shape {tuple(tensor.shape)}); expected 1 or {channels}")
        return _as_tensor(values.reshape(-1, 1, 1), dtype=tensor.dtype, device=tensor.device)

    def __repr__(self):
        return f"{type(self).__name__}(mean={self.mean}, std={self.std})"


# ---- geometry: sizes, padding, crops, flips ---------------------------------------------------------------


def _pair(size, owner) -> tuple:
    """``size`` as (h, w): an int is square, a 1-sequence too."""
    if isinstance(size, numbers.Integral) and not isinstance(size, bool):
        size = (int(size), int(size))
    elif isinstance(size, (tuple, list)) and len(size) == 1:
        size = (size[0], size[0])
    if not (isinstance(size, (tuple, list)) and len(size) == 2):
        raise ValueError("Please provide only two dimensions (h, w) for size.")
    if not all(isinstance(s, numbers.Integral) and not isinstance(s, bool) and s > 0 for s in size):
        raise ValueError(f"{owner}: size must be positive ints, got {tuple(size)}")
    return int(size[0]), int(size[1])


def _ltrb(padding) -> tuple:
    """Padding as (left, top, right, bottom): an int on every side, (lr, tb), or all four."""
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


def _check_padding_mode(mode):
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
    _check_padding_mode(padding_mode)
    left, top, right, bottom = _ltrb(padding)
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


class Pad(_Transform):
    """Pad the four sides of a picture (see ``pad``).

    Args:
        padding: an int, (left/right, top/bottom) or (left, top, right, bottom).
        fill: the value of "constant" padding.
        padding_mode: "constant", "edge", "reflect" or "symmetric".
    """

    _repr_fields = ("padding", "fill", "padding_mode")

    def __init__(self, padding, fill=0, padding_mode="constant"):
        _ltrb(padding)
        _check_padding_mode(padding_mode)
        self.padding, self.fill, self.padding_mode = padding, fill, padding_mode

    def __call__(self, img):
        return pad(img, self.padding, self.fill, self.padding_mode)


class RandomCrop(_Transform):
    """A window of ``size`` at a uniformly random place, after optional padding.

    Args:
        size: (h, w) of the window, or an int for a square.
        padding: padding added first (int, 2 or 4 values), or None.
        pad_if_needed: pad a picture smaller than ``size`` up to it (so the crop always fits).
        fill: the value of "constant" padding.
        padding_mode: "constant", "edge", "reflect" or "symmetric".
    """

    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant"):
        self.size = _pair(size, "RandomCrop")
        if padding is not None:
            _ltrb(padding)
        _check_padding_mode(padding_mode)
        self.padding, self.pad_if_needed, self.fill, self.padding_mode = padding, pad_if_needed, fill, padding_mode

    @staticmethod
    def get_params(img, output_size) -> tuple:
        """A random (top, left, height, width) window of ``output_size`` inside ``img``.

        Args:
            img: the picture or Tensor.
            output_size: (h, w) of the window.
        """
        h, w = image_size(img)
        th, tw = output_size
        if h < th or w < tw:
            raise ValueError(f"Required crop size {(th, tw)} is larger than input image size {(h, w)}")
        top = int(cpu_generator().integers(0, h - th + 1))
        left = int(cpu_generator().integers(0, w - tw + 1))
        return top, left, th, tw

    def __call__(self, img):
        if self.padding is not None:
            img = pad(img, self.padding, self.fill, self.padding_mode)
        h, w = image_size(img)
        th, tw = self.size
        if self.pad_if_needed and (h < th or w < tw):
            img = pad(img, (max(tw - w, 0), max(th - h, 0)), self.fill, self.padding_mode)
        return crop(img, *self.get_params(img, self.size))

    def __repr__(self):
        return f"{type(self).__name__}(size={self.size}, padding={self.padding})"


class CenterCrop(_Transform):
    """The window of ``size`` at the centre (a smaller picture is zero-padded around first).

    Args:
        size: (h, w) of the window, or an int for a square.
    """

    _repr_fields = ("size",)

    def __init__(self, size):
        self.size = _pair(size, "CenterCrop")

    def __call__(self, img):
        h, w = image_size(img)
        th, tw = self.size
        if th > h or tw > w:
            # NOTE: the odd pixel of padding goes right/bottom, as torchvision places it
            dw, dh = max(tw - w, 0), max(th - h, 0)
            img = pad(img, (dw // 2, dh // 2, (dw + 1) // 2, (dh + 1) // 2))
            h, w = image_size(img)
        # NOTE: round() halves to even: the offset of an odd margin is torchvision's int(round(margin / 2))
        return crop(img, int(round((h - th) / 2.0)), int(round((w - tw) / 2.0)), th, tw)


class _RandomFlip(_Transform):
    _repr_fields = ("p",)
    _flip = None

    def __init__(self, p=0.5):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"{type(self).__name__}: p must be a probability in [0, 1], got {p}")
        self.p = p

    def __call__(self, img):
        return type(self)._flip(img) if cpu_generator().random() < self.p else img


class RandomHorizontalFlip(_RandomFlip):
    """Mirror left to right with probability ``p``.

    Args:
        p: the probability of flipping.
    """

    _flip = staticmethod(hflip)


class RandomVerticalFlip(_RandomFlip):
    """Mirror top to bottom with probability ``p``.

    Args:
        p: the probability of flipping.
    """

    _flip = staticmethod(vflip)


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


def resize(img, size, interpolation=InterpolationMode.BILINEAR, max_size=None):
    """A picture or Tensor resampled to ``size`` with ``F.interpolate`` (align_corners=False, no antialias).

    A uint8 input is resampled in float32 and rounded half to even back to uint8 (bicubic clipped
    to 0..255), as torchvision treats uint8 tensors.

    Args:
        img: an Image, PIL image, or Tensor (..., H, W).
        size: an int (shorter side) or (h, w).
        interpolation: an ``InterpolationMode`` (or its string value).
        max_size: the longer side's bound when ``size`` is an int.
    """
    mode = InterpolationMode(interpolation).value
    h, w = image_size(img)
    out = resized_size(h, w, size, max_size)
    if out == (h, w):
        return img
    if isinstance(img, Tensor):
        return _resize_tensor(img, out, mode)
    chw = Tensor(numpy.ascontiguousarray(as_image(img, "resize").array.transpose(2, 0, 1)))
    return Image(_resize_tensor(chw, out, mode).array.transpose(1, 2, 0))


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


class Resize(_Transform):
    """Resample a picture to ``size`` (see ``resize``).

    NOTE: cupynet has no antialiasing filter: ``antialias=True`` (torchvision's default) only matters
    when shrinking, where cupynet samples as torchvision does with ``antialias=False`` and warns once.

    Args:
        size: an int (shorter side, aspect kept) or (h, w).
        interpolation: an ``InterpolationMode``: NEAREST, NEAREST_EXACT, BILINEAR (default) or BICUBIC.
        max_size: the longer side's bound when ``size`` is an int.
        antialias: torchvision's antialiasing switch (see the note).
    """

    _repr_fields = ("size", "interpolation", "max_size", "antialias")

    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
        if isinstance(size, (tuple, list)) and len(size) == 1:
            size = size[0]
        if isinstance(size, (tuple, list)):
            size = _pair(size, "Resize") if len(size) == 2 else _raise_resize_size()
        elif not (isinstance(size, numbers.Integral) and not isinstance(size, bool) and size > 0):
            raise TypeError(f"Size should be int or sequence. Got {type(size)}")
        if max_size is not None and not isinstance(size, numbers.Integral):
            raise ValueError("max_size should only be passed if size specifies the length of the smaller edge")
        self.size, self.max_size, self.antialias = size, max_size, antialias
        self.interpolation = InterpolationMode(interpolation)

    def __call__(self, img):
        h, w = image_size(img)
        out = resized_size(h, w, self.size, self.max_size)
        shrinking = out[0] < h or out[1] < w
        if self.antialias and shrinking and self.interpolation in (InterpolationMode.BILINEAR,
                                                                   InterpolationMode.BICUBIC):
            warnings.warn("Resize: cupynet has no antialiasing filter; shrinking samples as torchvision's "
                          "antialias=False does", UserWarning, stacklevel=2)
        return resize(img, self.size, self.interpolation, self.max_size)

    def __repr__(self):
        return (f"{type(self).__name__}(size={self.size}, interpolation={self.interpolation.value}, "
                f"max_size={self.max_size}, antialias={self.antialias})")


def _raise_resize_size():
    raise ValueError("If size is a sequence, it should have 1 or 2 values")
