"""Spatial transformer sampling: ``affine_grid`` and ``grid_sample`` (2-D), PyTorch's semantics.

Both are compositions of cupynet ops, so their gradients (to the input, to the grid, to
``theta``) and second derivatives come from those ops: a sampling location is unnormalised
and padded with arithmetic, ``floor`` picks the corner pixels (no gradient), ``gather`` reads
them from the flattened planes (its backward scatter-adds), and the bilinear weights are
differentiable functions of the location.

NOTE (AMP): PyTorch lists ``grid_sample`` as ``promote``. As a composition it has no op class of
its own; its arithmetic promotes a float16 input against a float32 grid to float32 anyway.
"""

from __future__ import annotations

import numpy

from .. import dtypes
from ..checks import require_floating, require_tensor
from ..tensor import Tensor
from ._util import xp_of
from .indexing import gather, where
from .shape import reshape

__all__ = ["affine_grid", "grid_sample"]

_MODES = ("bilinear", "nearest")
_PADDINGS = ("zeros", "border", "reflection")


def _base_coords(xp, n, align_corners, dtype):
    """The n normalised pixel centres in [-1, 1] (corner pixels' centres at +-1 with align_corners)."""
    coords = numpy.linspace(-1.0, 1.0, n) if n > 1 else numpy.zeros(1)
    if not align_corners:
        coords = coords * (n - 1) / n
    return xp.asarray(coords.astype(dtype))


def affine_grid(theta, size, align_corners=False):
    """The sampling grid (N, H, W, 2) of the affine maps ``theta`` (N, 2, 3) over an output of ``size``.

    Point (x, y) of the output's normalised coordinates samples ``theta @ (x, y, 1)``.

    Args:
        theta: a floating Tensor (N, 2, 3).
        size: the output size (N, C, H, W).
        align_corners: whether -1 and 1 are the centres of the corner pixels (else their outer edges).
    """
    if not isinstance(theta, Tensor) or not dtypes.is_floating(theta.dtype):
        raise ValueError(f"Expected theta to have floating point type, but got "
                         f"{theta.dtype if isinstance(theta, Tensor) else type(theta).__name__}")
    size = tuple(size)
    if len(size) != 4:
        raise NotImplementedError(f"affine_grid only supports 4D sizes, for 2D affine transformations, in cupynet. "
                                  f"Got size {size}.")
    if any(not isinstance(v, int) or v <= 0 for v in size):
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    n, _, h, w = size
    if theta.ndim != 3 or tuple(theta.shape) != (n, 2, 3):
        raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. Got "
                         f"{tuple(theta.shape)}.")
    xp = xp_of(theta)
    xs, ys = _base_coords(xp, w, align_corners, theta.dtype), _base_coords(xp, h, align_corners, theta.dtype)
    base = xp.stack([xp.broadcast_to(xs[None, :], (h, w)), xp.broadcast_to(ys[:, None], (h, w)),
                     xp.ones((h, w), dtype=theta.dtype)], -1)
    # NOTE: sum_j base[..., j] theta[n, k, j] as a broadcast product and sum (no matmul: its lower
    # autocast policy would round theta to half, where PyTorch's affine_grid runs in theta's dtype)
    product = Tensor(base.reshape(1, h, w, 1, 3)) * reshape(theta, (n, 1, 1, 2, 3))
    return product.sum(-1)


def _unnormalize(coord, size, align_corners):
    """Normalised [-1, 1] coordinates to pixel positions."""
    if align_corners:
        return (coord + 1.0) * ((size - 1) / 2.0)
    return ((coord + 1.0) * size - 1.0) / 2.0


def _reflect(coord, twice_low, twice_high):
    """``coord`` reflected back into [twice_low / 2, twice_high / 2] (PyTorch's reflect_coordinates)."""
    if twice_low == twice_high:
        return coord * 0.0
    low, span = twice_low / 2.0, (twice_high - twice_low) / 2.0
    dist = (coord - low).abs()
    flips = (dist / span).floor()
    extra = dist - flips * span
    even = Tensor(xp_of(flips).equal(xp_of(flips).mod(flips.array, 2.0), 0.0))
    return where(even, extra + low, span - extra + low)


def _source(coord, size, padding_mode, align_corners):
    """The pixel position a normalised coordinate samples, after the padding mode's folding or clipping."""
    x = _unnormalize(coord, size, align_corners)
    if padding_mode == "reflection":
        x = _reflect(x, 0, 2 * (size - 1)) if align_corners else _reflect(x, -1, 2 * size - 1)
    if padding_mode in ("border", "reflection"):
        x = x.clamp(0, size - 1)
    return x


def _corner(flat, ix, iy, h, w):
    """The input values at integer pixels (ix, iy) (arrays), 0 outside; shape (N, C, points)."""
    xp = xp_of(ix)
    inside = (ix >= 0) & (ix < w) & (iy >= 0) & (iy < h)
    index = xp.where(inside, iy * w + ix, 0).astype(dtypes.int64)
    n, c = flat.shape[:2]
    values = gather(flat, 2, Tensor(xp.broadcast_to(index[:, None, :], (n, c, index.shape[-1]))))
    return values, Tensor(inside[:, None, :])


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):  # noqa: A002
    """Sample ``input`` (N, C, H, W) at the normalised locations ``grid`` (N, Ho, Wo, 2) as (x, y).

    Args:
        input: a floating Tensor (N, C, H, W).
        grid: a floating Tensor (N, Ho, Wo, 2); -1 and 1 are the input's edges (see align_corners).
        mode: "bilinear" or "nearest" (half-way points round to even).
        padding_mode: "zeros", "border" or "reflection": what is read outside the input.
        align_corners: -1 and 1 are the centres of the corner pixels (True) or their outer edges (False,
            the default).
    """
    _check_grid_sample(input, grid, mode, padding_mode)
    n, c, h, w = input.shape
    ho, wo = grid.shape[1:3]
    points = reshape(grid, (n, ho * wo, 2))
    x = _source(points[..., 0], w, padding_mode, bool(align_corners))
    y = _source(points[..., 1], h, padding_mode, bool(align_corners))
    flat = reshape(input, (n, c, h * w))
    xp = xp_of(input)
    if mode == "nearest":
        values, inside = _corner(flat, xp.rint(x.array).astype(numpy.int64), xp.rint(y.array).astype(numpy.int64),
                                 h, w)
        return reshape(where(inside, values, 0.0), (n, c, ho, wo))
    x0, y0 = xp.floor(x.array).astype(numpy.int64), xp.floor(y.array).astype(numpy.int64)
    fx, fy = x - Tensor(x0.astype(x.dtype)), y - Tensor(y0.astype(y.dtype))  # NOTE: carry the grid's gradient
    out = None
    for dx, dy, weight in ((0, 0, (1.0 - fx) * (1.0 - fy)), (1, 0, fx * (1.0 - fy)), (0, 1, (1.0 - fx) * fy),
                           (1, 1, fx * fy)):
        values, inside = _corner(flat, x0 + dx, y0 + dy, h, w)
        term = where(inside, values * reshape(weight, (n, 1, ho * wo)), 0.0)
        out = term if out is None else out + term
    return reshape(out.to(dtypes.result_type(input.dtype, grid.dtype)), (n, c, ho, wo))


def _check_grid_sample(input, grid, mode, padding_mode):  # noqa: A002
    for name, t in (("input", input), ("grid", grid)):
        require_tensor("grid_sample", t, name)
        require_floating("grid_sample", t, name)
    if mode not in _MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear' or 'nearest' (cupynet has no "
                         f"'bicubic'), but got: '{mode}'")
    if padding_mode not in _PADDINGS:
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if input.ndim != 4:
        raise NotImplementedError(f"grid_sample: cupynet samples 4-D inputs (N, C, H, W) only, got shape "
                                  f"{tuple(input.shape)}")
    if grid.ndim != 4 or grid.shape[-1] != 2 or grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sample(): expected grid of shape (N, H_out, W_out, 2) with N = {input.shape[0]}, "
                           f"but got grid with sizes {list(grid.shape)}")
    if 0 in input.shape[2:]:
        raise RuntimeError(f"grid_sample(): expected input to have non-empty spatial dimensions, but input has sizes "
                           f"{list(input.shape)}")


METHODS = {}
