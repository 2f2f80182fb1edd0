"""``torchvision.transforms``' everyday classes, on cupynet ``Image``s (or PIL images) and Tensors.

Each class holds its settings and calls the function of ``functional`` (``torchvision.transforms.functional``)
that does the work; see there for what a picture is and how Tensors keep their history.

Randomness (``RandomCrop``'s offset, ``RandomHorizontalFlip``'s coin) is drawn from
cupynet's CPU generator, so ``cupynet.manual_seed`` (``torch.manual_seed`` under
``cupynet run``) makes a pipeline repeatable; the draws are not torch's bit for bit.
"""

from __future__ import annotations

import math
import numbers

from cupynet.random import cpu_generator
from cupynet.vision.transforms import functional as F
from cupynet.vision.transforms.functional import (
    InterpolationMode,
    check_padding_mode,
    crop,
    hflip,
    image_size,
    pad,
    padding_ltrb,
    resize,
    size_pair,
    vflip,
)

__all__ = ["Compose", "ToTensor", "PILToTensor", "ToPILImage", "Normalize", "Lambda", "Pad", "RandomCrop",
           "CenterCrop", "RandomResizedCrop", "RandomHorizontalFlip", "RandomVerticalFlip", "Resize",
           "InterpolationMode", "functional", "ColorJitter", "Grayscale", "RandomGrayscale", "GaussianBlur",
           "RandomErasing", "ConvertImageDtype", "RandomApply", "RandomChoice", "RandomOrder"]


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
        return F.to_tensor(pic)


class ToPILImage(_Transform):
    """A Tensor (C, H, W) or array (H, W, C) as an ``Image`` (cupynet's PIL stand-in; see ``to_pil_image``).

    Args:
        mode: "L", "RGB" or "RGBA", checked against the channel count when given.
    """

    _repr_fields = ("mode",)

    def __init__(self, mode=None):
        self.mode = mode

    def __call__(self, pic):
        return F.to_pil_image(pic, self.mode)


class PILToTensor(_Transform):
    """A picture as a CPU uint8 Tensor (C, H, W), values unchanged."""

    def __call__(self, pic):
        return F.pil_to_tensor(pic)


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
        F.check_tensor_image(tensor)
        key = (tensor.dtype, str(tensor.device), tensor.shape[-3])
        if key not in self._constants:  # NOTE: made and checked once per dtype, device and channel count
            self._constants[key] = F.normalize_constants(self.mean, self.std, tensor)
        return F.apply_normalize(tensor, *self._constants[key], self.inplace)

    def __getstate__(self):
        return {**self.__dict__, "_constants": {}}  # NOTE: worker processes remake their own constants

    def __repr__(self):
        return f"{type(self).__name__}(mean={self.mean}, std={self.std})"


# ---- geometry: sizes, padding, crops, flips ---------------------------------------------------------------


class Pad(_Transform):
    """Pad the four sides of a picture (see ``pad``).

    Args:
        padding: an int, (left/right, top/bottom) or (left, top, right, bottom).
        fill: the value of "constant" padding.
        padding_mode: "constant", "edge", "reflect" or "symmetric".
    """

    _repr_fields = ("padding", "fill", "padding_mode")

    def __init__(self, padding, fill=0, padding_mode="constant"):
        padding_ltrb(padding)
        check_padding_mode(padding_mode)
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
        self.size = size_pair(size, "RandomCrop")
        if padding is not None:
            padding_ltrb(padding)
        check_padding_mode(padding_mode)
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
        self.size = size_pair(size, "CenterCrop")

    def __call__(self, img):
        return F.center_crop(img, self.size)


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


class Resize(_Transform):
    """Resample a picture to ``size`` (see ``resize``).

    NOTE: cupynet has no antialiasing filter: ``antialias=True`` (torchvision's default) only matters
    when shrinking, where cupynet samples as torchvision does with ``antialias=False`` and warns.

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
        if isinstance(size, (tuple, list)) and len(size) != 2:
            raise ValueError("If size is a sequence, it should have 1 or 2 values")
        if isinstance(size, (tuple, list)):
            size = size_pair(size, "Resize")
        elif not (isinstance(size, numbers.Integral) and not isinstance(size, bool) and size > 0):
            raise TypeError(f"Size should be int or sequence. Got {type(size)}")
        if max_size is not None and not isinstance(size, numbers.Integral):
            raise ValueError("max_size should only be passed if size specifies the length of the smaller edge")
        self.size, self.max_size, self.antialias = size, max_size, antialias
        self.interpolation = InterpolationMode(interpolation)

    def __call__(self, img):
        return resize(img, self.size, self.interpolation, self.max_size, self.antialias)

    def __repr__(self):
        return (f"{type(self).__name__}(size={self.size}, interpolation={self.interpolation.value}, "
                f"max_size={self.max_size}, antialias={self.antialias})")




class RandomResizedCrop(_Transform):
    """A random window of random area and aspect ratio, resized to ``size`` (Inception-style augmentation).

    Args:
        size: (h, w) of the output, or an int for a square.
        scale: range of the window's area as a fraction of the picture's.
        ratio: range of the window's aspect ratio (width / height), drawn uniformly in log space.
        interpolation: an ``InterpolationMode`` for the resize.
        antialias: torchvision's switch (see ``Resize``: cupynet has no antialiasing filter).
    """

    _repr_fields = ("size", "scale", "ratio")

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation=InterpolationMode.BILINEAR, antialias=True):
        self.size = size_pair(size, "RandomResizedCrop")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            raise ValueError(f"RandomResizedCrop: scale and ratio should be of kind (min, max), got scale={scale}, "
                             f"ratio={ratio}")
        self.scale, self.ratio = tuple(scale), tuple(ratio)
        self.interpolation, self.antialias = InterpolationMode(interpolation), antialias

    @staticmethod
    def get_params(img, scale, ratio) -> tuple:
        """A random (top, left, height, width) window: 10 tries at a random area and ratio, else the centre.

        Args:
            img: the picture or Tensor.
            scale: (min, max) area fraction.
            ratio: (min, max) aspect ratio.
        """
        height, width = image_size(img)
        area, rng = height * width, cpu_generator()
        log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
        for _ in range(10):
            target = area * rng.uniform(scale[0], scale[1])
            aspect = math.exp(rng.uniform(*log_ratio))
            w, h = round(math.sqrt(target * aspect)), round(math.sqrt(target / aspect))
            if 0 < w <= width and 0 < h <= height:
                return int(rng.integers(0, height - h + 1)), int(rng.integers(0, width - w + 1)), h, w
        # NOTE: no try fitted (a very long picture): the largest centred window whose ratio is in range
        in_ratio = width / height
        w, h = width, height
        if in_ratio < ratio[0]:
            h = int(round(w / ratio[0]))
        elif in_ratio > ratio[1]:
            w = int(round(h * ratio[1]))
        return (height - h) // 2, (width - w) // 2, h, w

    def __call__(self, img):
        top, left, h, w = self.get_params(img, self.scale, self.ratio)
        return F.resized_crop(img, top, left, h, w, self.size, self.interpolation, self.antialias)


# ---- colour, blur, erasing, dtype, random composition (torchvision's other transforms) --------------------------


def _jitter_range(name, value, center=1.0, bound=(0.0, float("inf")), clip_first_to_zero=True):
    """torchvision's ``ColorJitter._check_input``: a number v is [center - v, center + v]; None when it is a no-op."""
    if isinstance(value, numbers.Number) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"If {name} is a single number, it must be non negative.")
        value = [center - float(value), center + float(value)]
        if clip_first_to_zero:
            value[0] = max(value[0], 0.0)
    elif isinstance(value, (tuple, list)) and len(value) == 2:
        value = [float(value[0]), float(value[1])]
    else:
        raise TypeError(f"{name} should be a single number or a list/tuple with length 2.")
    if not bound[0] <= value[0] <= value[1] <= bound[1]:
        raise ValueError(f"{name} values should be between {bound}, but got {value}.")
    return None if value[0] == value[1] == center else tuple(value)


class ColorJitter(_Transform):
    """Random brightness, contrast, saturation and hue changes, applied in a random order.

    Args:
        brightness: b >= 0 draws a factor in [max(0, 1 - b), 1 + b]; or a (min, max) pair.
        contrast: as brightness.
        saturation: as brightness.
        hue: h in [0, 0.5] draws a hue shift in [-h, h]; or a (min, max) pair within [-0.5, 0.5].
    """

    _repr_fields = ("brightness", "contrast", "saturation", "hue")

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        self.brightness = _jitter_range("brightness", brightness)
        self.contrast = _jitter_range("contrast", contrast)
        self.saturation = _jitter_range("saturation", saturation)
        self.hue = _jitter_range("hue", hue, center=0.0, bound=(-0.5, 0.5), clip_first_to_zero=False)

    @staticmethod
    def get_params(brightness, contrast, saturation, hue) -> tuple:
        """A random order of the four changes and a factor for each one that is on (None for the others).

        Args:
            brightness: (min, max) or None.
            contrast: (min, max) or None.
            saturation: (min, max) or None.
            hue: (min, max) or None.
        """
        rng = cpu_generator()
        order = [int(i) for i in rng.permutation(4)]
        factors = tuple(None if r is None else float(rng.uniform(r[0], r[1]))
                        for r in (brightness, contrast, saturation, hue))
        return (order,) + factors

    def __call__(self, img):
        order, *factors = self.get_params(self.brightness, self.contrast, self.saturation, self.hue)
        adjust = (F.adjust_brightness, F.adjust_contrast, F.adjust_saturation, F.adjust_hue)
        for i in order:
            if factors[i] is not None:
                img = adjust[i](img, factors[i])
        return img


class Grayscale(_Transform):
    """The luma of an RGB picture (``rgb_to_grayscale``), as 1 or 3 channels.

    Args:
        num_output_channels: 1 or 3.
    """

    _repr_fields = ("num_output_channels",)

    def __init__(self, num_output_channels=1):
        if num_output_channels not in (1, 3):
            raise ValueError("num_output_channels should be either 1 or 3")
        self.num_output_channels = num_output_channels

    def __call__(self, img):
        return F.rgb_to_grayscale(img, self.num_output_channels)


class RandomGrayscale(_Transform):
    """With probability ``p``, the picture's grey version with as many channels as it had.

    Args:
        p: the probability.
    """

    _repr_fields = ("p",)

    def __init__(self, p=0.1):
        self.p = p

    def __call__(self, img):
        if cpu_generator().random() >= self.p:
            return img
        channels = img.shape[-3] if hasattr(img, "ndim") else F.as_image(img, "RandomGrayscale").array.shape[2]
        return F.rgb_to_grayscale(img, 3 if channels == 3 else 1)


class GaussianBlur(_Transform):
    """A Gaussian blur with ``sigma`` drawn uniformly from a range each call (``gaussian_blur``).

    Args:
        kernel_size: an odd int, or (kx, ky).
        sigma: a positive number (fixed) or a (min, max) range.
    """

    _repr_fields = ("kernel_size", "sigma")

    def __init__(self, kernel_size, sigma=(0.1, 2.0)):
        self.kernel_size = (kernel_size, kernel_size) if isinstance(kernel_size, int) else tuple(kernel_size)
        F._blur_args(self.kernel_size, 1.0)
        if isinstance(sigma, numbers.Number):
            if sigma <= 0:
                raise ValueError("If sigma is a single number, it must be positive.")
            sigma = (float(sigma), float(sigma))
        elif not (isinstance(sigma, (tuple, list)) and len(sigma) == 2 and 0.0 < sigma[0] <= sigma[1]):
            raise ValueError("sigma values should be positive and of the form (min, max).")
        self.sigma = tuple(float(v) for v in sigma)

    @staticmethod
    def get_params(sigma_min, sigma_max) -> float:
        """A sigma drawn uniformly in [sigma_min, sigma_max].

        Args:
            sigma_min: the low end.
            sigma_max: the high end.
        """
        return float(cpu_generator().uniform(sigma_min, sigma_max))

    def __call__(self, img):
        sigma = self.get_params(*self.sigma)
        return F.gaussian_blur(img, self.kernel_size, [sigma, sigma])


class RandomErasing(_Transform):
    """With probability ``p``, a random rectangle of a Tensor image set to ``value`` (Cutout-style augmentation).

    Args:
        p: the probability of erasing.
        scale: range of the rectangle's area as a fraction of the image's.
        ratio: range of its aspect ratio (h / w), drawn uniformly in log space.
        value: a number, a per-channel sequence, or "random" (standard normal noise).
        inplace: erase in the input Tensor itself.
    """

    _repr_fields = ("p", "scale", "ratio", "value", "inplace")

    def __init__(self, p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0, inplace=False):
        if not isinstance(value, (numbers.Number, str, tuple, list)) or (isinstance(value, str) and value != "random"):
            raise ValueError("If value is str, it should be 'random'")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            raise ValueError("Scale and ratio should be of kind (min, max)")
        if scale[0] < 0 or scale[1] > 1:
            raise ValueError("Scale should be between 0 and 1")
        if not 0 <= p <= 1:
            raise ValueError("Random erasing probability should be between 0 and 1")
        self.p, self.scale, self.ratio, self.value, self.inplace = p, tuple(scale), tuple(ratio), value, inplace

    @staticmethod
    def get_params(img, scale, ratio, value=None) -> tuple:
        """(i, j, h, w, v): 10 tries at a random area and ratio that fits; else the whole image, unchanged.

        Args:
            img: the Tensor image (..., C, H, W).
            scale: (min, max) area fraction.
            ratio: (min, max) aspect ratio.
            value: the fill (None: standard normal noise of the rectangle's shape).
        """
        c, img_h, img_w = img.shape[-3:]
        rng, area = cpu_generator(), img_h * img_w
        log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
        for _ in range(10):
            erase_area = area * rng.uniform(scale[0], scale[1])
            aspect = math.exp(rng.uniform(*log_ratio))
            h, w = int(round(math.sqrt(erase_area * aspect))), int(round(math.sqrt(erase_area / aspect)))
            if not (h < img_h and w < img_w):
                continue
            v = value if value is not None else F._as_tensor(rng.standard_normal((c, h, w)), dtype=img.dtype)
            return int(rng.integers(0, img_h - h + 1)), int(rng.integers(0, img_w - w + 1)), h, w, v
        return 0, 0, img_h, img_w, img

    def __call__(self, img):
        if cpu_generator().random() >= self.p:
            return img
        value = None if self.value == "random" else self.value
        if isinstance(value, (tuple, list)):
            if len(value) not in (1, img.shape[-3]):
                raise ValueError(f"If value is a sequence, it should have either a single value or {img.shape[-3]} "
                                 f"(the number of input channels)")
            value = F._as_tensor([float(v) for v in value], dtype=img.dtype).reshape(-1, 1, 1)
        i, j, h, w, v = self.get_params(img, self.scale, self.ratio, value)
        return F.erase(img, i, j, h, w, v, self.inplace)


class ConvertImageDtype(_Transform):
    """An image Tensor converted to ``dtype`` with its values rescaled (``convert_image_dtype``).

    Args:
        dtype: the target dtype.
    """

    _repr_fields = ()

    def __init__(self, dtype):
        self.dtype = dtype

    def __call__(self, image):
        return F.convert_image_dtype(image, self.dtype)


class RandomApply(_Transform):
    """The transforms in sequence with probability ``p``, else nothing.

    Args:
        transforms: a list of callables.
        p: the probability.
    """

    def __init__(self, transforms, p=0.5):
        self.transforms, self.p = list(transforms), p

    def __call__(self, img):
        if self.p < cpu_generator().random():
            return img
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self):
        inner = "".join(f"\n    {t}" for t in self.transforms)
        return f"{type(self).__name__}(\n    p={self.p}{inner}\n)"


class RandomChoice(_Transform):
    """One of the transforms, picked at random (with weights ``p``).

    Args:
        transforms: a list of callables.
        p: weights of the picks (normalised), or None for uniform.
    """

    def __init__(self, transforms, p=None):
        if p is not None and len(p) != len(transforms):
            raise ValueError(f"Length of p doesn't match the number of transforms: {len(p)} != {len(transforms)}")
        self.transforms = list(transforms)
        total = None if p is None else float(sum(p))
        self.p = [1.0 / len(self.transforms)] * len(self.transforms) if p is None else [v / total for v in p]

    def __call__(self, *args):
        pick = int(cpu_generator().choice(len(self.transforms), p=self.p))
        return self.transforms[pick](*args)

    def __repr__(self):
        return f"{type(self).__name__}(transforms={self.transforms}, p={self.p})"


class RandomOrder(_Transform):
    """All the transforms, in a random order.

    Args:
        transforms: a list of callables.
    """

    def __init__(self, transforms):
        self.transforms = list(transforms)

    def __call__(self, img):
        for i in cpu_generator().permutation(len(self.transforms)):
            img = self.transforms[int(i)](img)
        return img
