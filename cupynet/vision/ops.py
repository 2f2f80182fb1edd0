"""``torchvision.ops``' box operations: ``nms``, ``batched_nms``, ``box_iou``, ``box_area``, ``box_convert``,
``clip_boxes_to_image``.

Boxes are ``(N, 4)`` Tensors, ``(x1, y1, x2, y2)`` unless said otherwise. ``box_area``, ``box_iou``,
``box_convert`` and ``clip_boxes_to_image`` are written with cupynet ops (differentiable, on any device),
in torchvision's formulas: half-precision boxes are measured in float32 (torchvision's upcast, which keeps
``w * h`` from overflowing).

``nms`` is the greedy suppression of torchvision's CPU kernel: boxes in decreasing score order (a stable
sort: equal scores keep their index order), each kept box removing the later ones whose IoU with it is
*greater* than the threshold; the IoU is computed with that kernel's arithmetic in the boxes' dtype (float32
for half types). It runs on the host: boxes on a GPU are read back once (a host sync, as torchvision's CUDA
kernel copies its mask back). ``batched_nms`` suppresses within each category only, by running ``nms`` per
category and merging in decreasing score order (ties by index); torchvision offsets each category's boxes
instead, which gives the same boxes except where the offset's rounding moves an IoU across the threshold.
"""

from __future__ import annotations

import numpy

import cupynet
from cupynet import backend, dtypes
from cupynet.tensor import Tensor

__all__ = ["nms", "batched_nms", "box_iou", "box_area", "box_convert", "clip_boxes_to_image"]

_FORMATS = ("xyxy", "xywh", "cxcywh")


def _check_boxes(fn: str, boxes, name="boxes"):
    if not isinstance(boxes, Tensor):
        raise TypeError(f"{fn}: {name} must be a Tensor, got {type(boxes).__name__}")
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise ValueError(f"{fn}: {name} must have shape (N, 4), got {tuple(boxes.shape)}")


def _upcast(t):
    """torchvision's ``_upcast``: half floats to float32, integers to int64 (no overflow in ``w * h``)."""
    if dtypes.is_floating(t.dtype):
        return t.float() if dtypes.is_low_precision(t.dtype) else t
    return t if t.dtype in (dtypes.int32, dtypes.int64) else t.long()


def box_area(boxes):
    """The area ``(x2 - x1) * (y2 - y1)`` of each box.

    Args:
        boxes: an ``(N, 4)`` Tensor in ``(x1, y1, x2, y2)`` form.
    """
    _check_boxes("box_area", boxes)
    boxes = _upcast(boxes)
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def box_iou(boxes1, boxes2):
    """The ``(N, M)`` intersection-over-union of every box of ``boxes1`` with every box of ``boxes2``.

    Args:
        boxes1: an ``(N, 4)`` Tensor in ``(x1, y1, x2, y2)`` form.
        boxes2: an ``(M, 4)`` Tensor in ``(x1, y1, x2, y2)`` form.
    """
    _check_boxes("box_iou", boxes1, "boxes1")
    _check_boxes("box_iou", boxes2, "boxes2")
    area1, area2 = box_area(boxes1), box_area(boxes2)
    top_left = cupynet.maximum(boxes1[:, None, :2], boxes2[:, :2])
    bottom_right = cupynet.minimum(boxes1[:, None, 2:], boxes2[:, 2:])
    wh = _upcast(bottom_right - top_left).clamp(min=0)
    inter = wh[:, :, 0] * wh[:, :, 1]
    return inter / (area1[:, None] + area2 - inter)


def _to_xyxy(boxes, fmt):
    a, b, c, d = boxes.unbind(-1)
    if fmt == "xywh":
        return cupynet.stack((a, b, a + c, b + d), dim=-1)
    return cupynet.stack((a - 0.5 * c, b - 0.5 * d, a + 0.5 * c, b + 0.5 * d), dim=-1)  # NOTE: cxcywh


def _from_xyxy(boxes, fmt):
    x1, y1, x2, y2 = boxes.unbind(-1)
    if fmt == "xywh":
        return cupynet.stack((x1, y1, x2 - x1, y2 - y1), dim=-1)
    return cupynet.stack(((x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1), dim=-1)  # NOTE: cxcywh


def box_convert(boxes, in_fmt, out_fmt):
    """Boxes converted between ``"xyxy"`` (corners), ``"xywh"`` (corner, size) and ``"cxcywh"`` (centre, size).

    Args:
        boxes: an ``(N, 4)`` Tensor in ``in_fmt``.
        in_fmt: the boxes' format.
        out_fmt: the format wanted.
    """
    if in_fmt not in _FORMATS or out_fmt not in _FORMATS:
        raise ValueError(f"box_convert: Unsupported Bounding Box Conversions for given in_fmt {in_fmt!r} and "
                         f"out_fmt {out_fmt!r}; expected each in {list(_FORMATS)}")
    _check_boxes("box_convert", boxes)
    if in_fmt == out_fmt:
        return boxes.clone()
    xyxy = boxes if in_fmt == "xyxy" else _to_xyxy(boxes, in_fmt)
    return xyxy if out_fmt == "xyxy" else _from_xyxy(xyxy, out_fmt)


def clip_boxes_to_image(boxes, size):
    """Boxes clipped to an image of ``size = (height, width)``: x into ``[0, width]``, y into ``[0, height]``.

    Args:
        boxes: a ``(..., 4)`` Tensor in ``(x1, y1, x2, y2)`` form.
        size: ``(height, width)``.
    """
    if not isinstance(boxes, Tensor) or boxes.ndim < 1 or boxes.shape[-1] != 4:
        raise ValueError(f"clip_boxes_to_image: boxes must be a Tensor of shape (..., 4), got "
                         f"{tuple(getattr(boxes, 'shape', ())) or type(boxes).__name__}")
    if not isinstance(size, (tuple, list)) or len(size) != 2:
        raise ValueError(f"clip_boxes_to_image: size must be (height, width), got {size!r}")
    height, width = size
    xs = boxes[..., 0::2].clamp(min=0, max=width)
    ys = boxes[..., 1::2].clamp(min=0, max=height)
    return cupynet.stack((xs, ys), dim=boxes.ndim).reshape(boxes.shape)


def _host_boxes(boxes, scores):
    compute = dtypes.compute_dtype(boxes.dtype) if dtypes.is_floating(boxes.dtype) else numpy.dtype(numpy.float32)
    return (numpy.asarray(backend.to_numpy(boxes.array)).astype(compute, copy=False),
            numpy.asarray(backend.to_numpy(scores.array)).astype(numpy.float64))


def _greedy_keep(boxes, scores, iou_threshold) -> numpy.ndarray:
    """The indices torchvision's CPU kernel keeps (host NumPy arrays in, int64 indices out)."""
    order = numpy.argsort(-scores, kind="stable")  # NOTE: descending, equal scores in index order
    x1, y1, x2, y2 = boxes.T
    areas = (x2 - x1) * (y2 - y1)
    suppressed = numpy.zeros(len(order), dtype=bool)
    keep = []
    with numpy.errstate(invalid="ignore", divide="ignore"):
        for position, i in enumerate(order):
            if suppressed[i]:
                continue
            keep.append(i)
            rest = order[position + 1:]
            w = numpy.maximum(0, numpy.minimum(x2[i], x2[rest]) - numpy.maximum(x1[i], x1[rest]))
            h = numpy.maximum(0, numpy.minimum(y2[i], y2[rest]) - numpy.maximum(y1[i], y1[rest]))
            inter = w * h
            # NOTE: the kernel's order of operations, in the boxes' dtype: inter / (area_i + area_j - inter)
            suppressed[rest[inter / (areas[i] + areas[rest] - inter) > iou_threshold]] = True
    return numpy.asarray(keep, dtype=numpy.int64)


def _check_nms(fn: str, boxes, scores, iou_threshold):
    _check_boxes(fn, boxes)
    if not isinstance(scores, Tensor) or scores.ndim != 1 or scores.shape[0] != boxes.shape[0]:
        raise ValueError(f"{fn}: scores must be a 1-D Tensor with one score per box ({boxes.shape[0]}), got "
                         f"{tuple(scores.shape) if isinstance(scores, Tensor) else type(scores).__name__}")
    if isinstance(iou_threshold, bool) or not isinstance(iou_threshold, (int, float)):
        raise TypeError(f"{fn}: iou_threshold must be a number, got {iou_threshold!r}")


def _indices(keep, like):
    """The kept indices as an int64 Tensor on the boxes' device."""
    out = Tensor(keep)
    return out if like.device.type == "cpu" else out.to(like.device)


def nms(boxes, scores, iou_threshold):
    """The indices of the boxes greedy non-maximum suppression keeps, in decreasing score order (int64).

    Args:
        boxes: an ``(N, 4)`` Tensor in ``(x1, y1, x2, y2)`` form.
        scores: an ``(N,)`` Tensor.
        iou_threshold: boxes whose IoU with a kept, higher-scoring box is above this are dropped.
    """
    _check_nms("nms", boxes, scores, iou_threshold)
    host_boxes, host_scores = _host_boxes(boxes, scores)
    return _indices(_greedy_keep(host_boxes, host_scores, float(iou_threshold)), boxes)


def batched_nms(boxes, scores, idxs, iou_threshold):
    """``nms`` within each category: a box suppresses only boxes of its own ``idxs`` value.

    Args:
        boxes: an ``(N, 4)`` Tensor in ``(x1, y1, x2, y2)`` form.
        scores: an ``(N,)`` Tensor.
        idxs: an ``(N,)`` integer Tensor: each box's category.
        iou_threshold: as in ``nms``.
    """
    _check_nms("batched_nms", boxes, scores, iou_threshold)
    if not isinstance(idxs, Tensor) or idxs.shape != scores.shape or dtypes.is_floating(idxs.dtype):
        raise ValueError(f"batched_nms: idxs must be an integer Tensor of shape {tuple(scores.shape)}, got "
                         f"{(tuple(idxs.shape), idxs.dtype) if isinstance(idxs, Tensor) else type(idxs).__name__}")
    host_boxes, host_scores = _host_boxes(boxes, scores)
    categories = numpy.asarray(backend.to_numpy(idxs.array))
    kept = [members[_greedy_keep(host_boxes[members], host_scores[members], float(iou_threshold))]
            for members in (numpy.flatnonzero(categories == c) for c in numpy.unique(categories))]
    keep = numpy.sort(numpy.concatenate(kept)) if kept else numpy.zeros(0, dtype=numpy.int64)
    keep = keep[numpy.argsort(-host_scores[keep], kind="stable")]
    return _indices(keep.astype(numpy.int64), boxes)
