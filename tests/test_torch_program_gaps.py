"""What YOLOv5's train.py needed of cupynet run, each against torch: torch.jit, torch.utils._pytree,
torch.nn.utils.fusion, DataParallel, _ConvNd/_get_name, set_printoptions' profile, DataLoader samplers and custom
collate, pathlib paths in checkpoints, % and //, torchvision.ops, torch.__version__ and package metadata; then what
its val.py/detect.py and the FLOP counter needed: torch.hub, torch.utils.mobile_optimizer, a sequence times a tensor,
torch.nn.modules' private bases."""

import collections
import importlib
import importlib.metadata
import pathlib
import textwrap
import warnings

import numpy as np
import pytest

import cupynet as cn
from cupynet import run
from cupynet.compat import jit, pytree
from cupynet.compat.data_parallel import DataParallel
from cupynet.compat.fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval
from cupynet.vision import ops as vops

torch = pytest.importorskip("torch")
tpytree = pytest.importorskip("torch.utils._pytree")


def _np(t):
    return np.asarray(cn.backend.to_numpy(t.detach().array)) if isinstance(t, cn.Tensor) else t.detach().numpy()


def _run(tmp_path, capsys, body):
    path = tmp_path / "prog.py"
    path.write_text(textwrap.dedent(body))
    rc = run.run_script(str(path), [])
    out = capsys.readouterr()
    return rc, out.out, out.err


# ----------------------------------------------------------------------------- torch.jit
def test_jit_entry_points_return_what_they_are_given():
    def f(x):
        return x * 2

    model = cn.nn.Linear(2, 2)
    assert jit.script(f) is f and jit.trace(f, (cn.ones(2),)) is f and jit.trace_module(model, {}) is model
    assert jit.ignore(f) is f and jit.ignore(drop=True)(f) is f and jit.unused(f) is f and jit.export(f) is f
    assert jit.annotate(list, [1]) == [1] and jit.is_scripting() is False and jit.is_tracing() is False
    assert issubclass(jit.TracerWarning, Warning) and issubclass(torch.jit.TracerWarning, Warning)
    assert jit.Final[int] is int


# ----------------------------------------------------------------------------- torch.utils._pytree
TREES = [{"b": 1, "a": (2, None, [3])}, [1, (2,), {"x": [4, 5]}], collections.OrderedDict(z=1, a=2), 7, None,
         collections.namedtuple("P", "x y")(1, [2, 3]), collections.defaultdict(int, a=1, b=[2]), {1: {}}, "ab", []]


@pytest.mark.parametrize("tree", TREES, ids=repr)
def test_pytree_leaves_and_round_trip_as_torch(tree):
    leaves, spec = pytree.tree_flatten(tree)
    assert leaves == tpytree.tree_flatten(tree)[0]
    rebuilt = pytree.tree_unflatten(leaves, spec)
    assert rebuilt == tree and type(rebuilt) is type(tree)
    assert spec.num_leaves == tpytree.tree_flatten(tree)[1].num_leaves
    double = (lambda v: v * 2 if isinstance(v, int) else v)
    assert pytree.tree_map(double, tree) == tpytree.tree_map(double, tree)


def test_pytree_errors_as_torch():
    assert pytree.tree_map(lambda a, b: a + b, [1, (2,)], [10, (20,)]) == [11, (22,)]
    with pytest.raises(ValueError, match="Node type mismatch"):
        pytree.tree_map(lambda a, b: a + b, [1, (2,)], [10, 20])
    with pytest.raises(ValueError, match="has length 1 but the spec refers to a pytree that holds 2 items"):
        pytree.tree_unflatten([1], pytree.tree_structure([1, 2]))
    with pytest.raises(TypeError, match="TreeSpec"):
        pytree.tree_unflatten([1], "spec")
    assert pytree.tree_leaves([cn.ones(1), (2,)], is_leaf=lambda v: isinstance(v, tuple))[1] == (2,)


# ----------------------------------------------------------------------------- fusion
@pytest.mark.parametrize("transpose", [False, True])
def test_fuse_conv_bn_eval_matches_torch_and_the_pair(transpose):
    rng = np.random.default_rng(1)
    shape = (3, 4, 3, 3) if transpose else (4, 3, 3, 3)
    w, b = rng.standard_normal(shape), rng.standard_normal(4)
    stats = [rng.standard_normal(4), rng.uniform(0.5, 2, 4), rng.standard_normal(4), rng.standard_normal(4)]
    x = rng.standard_normal((2, 3, 6, 6))
    outs = []
    for lib in (cn, torch):
        conv = lib.nn.ConvTranspose2d(3, 4, 3) if transpose else lib.nn.Conv2d(3, 4, 3)
        bn = lib.nn.BatchNorm2d(4)
        with lib.no_grad():
            conv.weight.copy_(lib.tensor(w, dtype=lib.float32))
            conv.bias.copy_(lib.tensor(b, dtype=lib.float32))
            for t, v in zip((bn.running_mean, bn.running_var, bn.weight, bn.bias), stats):
                t.copy_(lib.tensor(v, dtype=lib.float32))
        conv.eval(), bn.eval()
        fuse = fuse_conv_bn_eval if lib is cn else torch.nn.utils.fusion.fuse_conv_bn_eval
        fused = fuse(conv, bn, transpose=transpose)
        xt = lib.tensor(x, dtype=lib.float32)
        with lib.no_grad():
            outs.append((_np(fused.weight), _np(fused.bias), _np(fused(xt)), _np(bn(conv(xt)))))
        assert isinstance(fused.weight, lib.nn.Parameter) and fused is not conv
    (cw, cb, cy, cpair), (tw, tb, ty, _) = outs
    eps = 2.0 ** -23
    np.testing.assert_allclose(cw, tw, rtol=4 * eps, atol=4 * eps * np.abs(tw).max())
    np.testing.assert_allclose(cb, tb, rtol=4 * eps, atol=4 * eps * np.abs(tb).max())
    # NOTE: a 27-term dot product per output in float32 either way: its rounding bounds the difference
    np.testing.assert_allclose(cy, cpair, rtol=0, atol=64 * eps * np.abs(cpair).max())


def test_fusion_weights_without_conv_bias_and_linear_and_refusals():
    rng = np.random.default_rng(2)
    w, rm, rv = rng.standard_normal((4, 3, 1, 1)), rng.standard_normal(4), rng.uniform(0.5, 2, 4)
    got = fuse_conv_bn_weights(cn.tensor(w), None, cn.tensor(rm), cn.tensor(rv), 1e-5, None, None)
    want = torch.nn.utils.fusion.fuse_conv_bn_weights(torch.tensor(w), None, torch.tensor(rm), torch.tensor(rv),
                                                      1e-5, None, None)
    for g, t in zip(got, want):
        np.testing.assert_allclose(_np(g), t.detach().numpy(), rtol=1e-15)
    linear, bn = cn.nn.Linear(3, 4), cn.nn.BatchNorm1d(4)
    with pytest.raises(AssertionError, match="Fusion only for eval"):
        fuse_linear_bn_eval(linear, bn)
    linear.eval(), bn.eval()
    x = cn.randn(5, 3)
    with cn.no_grad():
        np.testing.assert_allclose(_np(fuse_linear_bn_eval(linear, bn)(x)), _np(bn(linear(x))), rtol=1e-5, atol=1e-6)
    with pytest.raises(AssertionError, match="out_features must equal bn.num_features"):
        fuse_linear_bn_eval(linear, cn.nn.BatchNorm1d(3).eval())


# ----------------------------------------------------------------------------- DataParallel, _ConvNd, _get_name
def test_data_parallel_on_one_device_is_its_module():
    model = cn.nn.Linear(3, 2)
    wrapped = DataParallel(model)
    assert wrapped.module is model and cn.nn.DataParallel is DataParallel
    assert cn.nn.parallel.DataParallel is DataParallel
    x = cn.randn(4, 3)
    np.testing.assert_array_equal(_np(wrapped(x)), _np(model(x)))
    assert list(wrapped.state_dict()) == list(torch.nn.DataParallel(torch.nn.Linear(3, 2)).state_dict())
    with pytest.raises(TypeError, match="must be a cupynet.nn.Module"):
        DataParallel(lambda x: x)
    with pytest.raises(ValueError, match="one device per process"):
        DataParallel(model, device_ids=[0, 1])


def test_conv_nd_path_and_get_name_as_torch():
    from cupynet.compat.nn_modules.conv import _ConvNd  # noqa: PLC0415
    assert issubclass(cn.nn.Conv2d, _ConvNd) and issubclass(torch.nn.Conv2d, torch.nn.modules.conv._ConvNd)
    assert cn.nn.Conv2d(1, 1, 1)._get_name() == torch.nn.Conv2d(1, 1, 1)._get_name() == "Conv2d"

    class Named(cn.nn.Module):
        def _get_name(self):
            return "Custom"

    assert repr(Named()) == "Custom()"


# ----------------------------------------------------------------------------- DataLoader
class _Squares(cn.data.Dataset):
    def __len__(self):
        return 10

    def __getitem__(self, i):
        return np.full(2, i, np.float32), f"img{i}.jpg", (i, i + 1)


def test_dataloader_builds_its_samplers_as_torch():
    for shuffle in (False, True):
        ours = cn.data.DataLoader(_Squares(), batch_size=3, shuffle=shuffle, drop_last=True)
        theirs = torch.utils.data.DataLoader(list(range(10)), batch_size=3, shuffle=shuffle, drop_last=True)
        assert isinstance(ours.sampler, cn.data.RandomSampler if shuffle else cn.data.SequentialSampler)
        assert type(theirs.sampler).__name__ in {"RandomSampler", "SequentialSampler"}
        assert isinstance(ours.batch_sampler, cn.data.BatchSampler)
        assert len(ours.batch_sampler.sampler) == len(theirs.batch_sampler.sampler) == 10
        assert len(ours) == len(theirs) == 3
        assert ours.batch_sampler.batch_size == 3 and ours.batch_sampler.drop_last is True


def test_repeating_the_batch_sampler_reshuffles_and_resume_still_repeats_the_order():
    # NOTE: YOLOv5's InfiniteDataLoader replaces batch_sampler by one that repeats it forever
    loader = cn.data.DataLoader(_Squares(), batch_size=5, shuffle=True, seed=3,
                                collate_fn=lambda s: [int(x[0][0]) for x in s])
    passes = [sorted(i for b in loader.batch_sampler for i in b) for _ in range(2)]
    assert passes == [list(range(10))] * 2
    first, second = [list(loader) for _ in range(2)]
    assert first != second  # NOTE: epochs 0 and 1 of seed 3 differ
    loader.load_state_dict({"seed": 3, "epoch": 1, "batches_done": 1})
    assert list(loader) == second[1:]

    class Repeat:
        def __init__(self, sampler):
            self.sampler = sampler

        def __iter__(self):
            while True:
                yield from iter(self.sampler)

    object.__setattr__(loader, "batch_sampler", Repeat(loader.batch_sampler))
    stream = iter(loader)
    batches = [next(stream) for _ in range(4)]
    assert sorted(batches[0] + batches[1]) == sorted(batches[2] + batches[3]) == list(range(10))
    assert batches[:2] != batches[2:]


def test_a_custom_collate_fn_batch_is_handed_out_untouched():
    def collate(samples):
        images, paths, shapes = zip(*samples)
        return cn.stack([cn.tensor(i) for i in images]), paths, shapes

    images, paths, shapes = next(iter(cn.data.DataLoader(_Squares(), batch_size=2, collate_fn=collate,
                                                         device="cpu")))
    assert paths == ("img0.jpg", "img1.jpg") and shapes == ((0, 1), (1, 2)) and images.shape == (2, 2)
    tpaths = next(iter(torch.utils.data.DataLoader(_Squares(), batch_size=2, collate_fn=lambda s: list(zip(*s))[1])))
    assert tpaths == paths


# ----------------------------------------------------------------------------- checkpoints with paths
def test_pathlib_paths_save_and_load_back_as_the_same_type(tmp_path):
    opt = {"save_dir": pathlib.Path("runs/train/exp"), "weights": pathlib.PurePosixPath("a/b.pt"),
           "win": pathlib.PureWindowsPath("C:/x/y"), "nested": [pathlib.Path("/abs/p")], "epochs": 3}
    cn.save({"opt": opt, "w": cn.ones(2)}, tmp_path / "ckpt.pt")
    back = cn.load(tmp_path / "ckpt.pt")["opt"]
    assert back == opt and all(type(back[k]) is type(opt[k]) for k in ("save_dir", "weights", "win"))
    assert type(back["nested"][0]) is type(opt["nested"][0])


def test_a_malformed_path_node_is_refused(tmp_path):
    from cupynet.serialization import CheckpointError, _Decoder  # noqa: PLC0415
    decoder = _Decoder("f.pt", [], None, None)
    for bad in (["PosixPath"], ["os.system", "x"], ["Path", 3]):
        with pytest.raises(CheckpointError, match="__path__ holds"):
            decoder.decode({"__path__": bad}, 0)
    windows = decoder.decode({"__path__": ["WindowsPath", "C:/a"]}, 0)
    assert isinstance(windows, pathlib.PureWindowsPath) and str(windows) == "C:\\a"


# ----------------------------------------------------------------------------- % and //
VALUES = [5.0, -5.0, 3.5, -4.0, 0.5, -0.5, 1.0, -1.0, 0.0, 7.25, -7.25]
DIVISORS = [-3.0, 3.0, -1.5, 2.0, 0.0, 2.0, float("inf"), 0.0, 0.0, -0.75, 0.75]


def _same(got, want):
    got, want = np.asarray(got, np.float64), want.double().numpy()
    assert np.array_equal(got, want, equal_nan=True), (got, want)
    finite = ~np.isnan(want)
    assert np.array_equal(np.signbit(got[finite]), np.signbit(want[finite])), (got, want)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("name", ["remainder", "fmod", "floor_divide"])
def test_rounding_divisions_match_torch_at_signs_zeros_and_infinities(name, dtype):
    a, b = cn.tensor(VALUES, dtype=dtype), cn.tensor(DIVISORS, dtype=dtype)
    ta, tb = (torch.tensor(v, dtype=getattr(torch, dtype)) for v in (VALUES, DIVISORS))
    got = getattr(cn, name)(a, b)
    assert got.dtype == cn.dtypes.as_dtype(dtype)
    _same(got.float().numpy(), getattr(torch, name)(ta, tb))


def test_integer_and_mixed_rounding_divisions_as_torch():
    a, b = [-7, 7, 5, -5, 0], [2, -2, 3, 3, -4]
    for name in ("remainder", "fmod", "floor_divide"):
        got = getattr(cn, name)(cn.tensor(a), cn.tensor(b))
        want = getattr(torch, name)(torch.tensor(a), torch.tensor(b))
        assert got.dtype == cn.int64 and got.numpy().tolist() == want.tolist()
    x, tx = cn.tensor([5, -5, 7]), torch.tensor([5, -5, 7])
    for f in (lambda v: v % 3, lambda v: v // -3, lambda v: v % 2.5, lambda v: 7 % v, lambda v: 7 // v,
              lambda v: v.remainder(-2), lambda v: v.fmod(-2), lambda v: v.floor_divide(2)):
        got, want = f(x), f(tx)
        assert str(got.dtype) == str(want.dtype).replace("torch.", "") and got.numpy().tolist() == want.tolist()
    assert (cn.tensor([5], dtype=cn.int32) % cn.tensor(3)).dtype == cn.int32
    assert (cn.tensor([5], dtype=cn.uint8) % 3).dtype == cn.uint8
    for f in (lambda v: v % 0, lambda v: v // 0, lambda v: cn.fmod(v, cn.tensor([1, 0, 1]))):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            f(x)
    with pytest.raises(TypeError, match="not implemented for bool"):
        cn.tensor([True]) % True
    with pytest.raises(TypeError, match="expected input to be a Tensor"):
        cn.fmod(5, cn.tensor([3.0]))


def test_rounding_division_gradients_as_torch():
    av, bv = [5.0, -5.0, 3.5, 7.25], [-3.0, 3.0, -1.5, 0.75]
    for name in ("remainder", "fmod"):
        a, b = cn.tensor(av, requires_grad=True), cn.tensor(bv, requires_grad=True)
        ta, tb = torch.tensor(av, requires_grad=True), torch.tensor(bv, requires_grad=True)
        got = cn.autograd.grad(getattr(cn, name)(a, b).sum(), [a, b])
        want = torch.autograd.grad(getattr(torch, name)(ta, tb).sum(), [ta, tb])
        for g, w in zip(got, want):
            assert g.numpy().tolist() == w.tolist()
    a = cn.tensor(av, requires_grad=True)
    with pytest.raises(RuntimeError, match="derivative for floor_divide is not implemented"):
        (a // 2).sum().backward()
    # NOTE: torch has no derivative of number % tensor; cupynet's is -floor(number / x), the divisor's rule
    x = cn.tensor(av, requires_grad=True)
    (g,) = cn.autograd.grad((1.5 % x).sum(), [x])
    assert g.numpy().tolist() == (-torch.floor(1.5 / torch.tensor(av))).tolist()


# ----------------------------------------------------------------------------- torchvision.ops
def _iou_reference(b1, b2):
    """torchvision's box_iou, written out with torch ops (torchvision is not installed here)."""
    area = lambda b: (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])  # noqa: E731
    lt, rb = torch.max(b1[:, None, :2], b2[:, :2]), torch.min(b1[:, None, 2:], b2[:, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    return inter / (area(b1)[:, None] + area(b2) - inter)


def _nms_reference(boxes, scores, threshold):
    """Greedy NMS by its definition, with torch ops: stable descending order, drop IoU > threshold."""
    order = torch.sort(scores, descending=True, stable=True).indices.tolist()
    iou, keep, dropped = _iou_reference(boxes, boxes), [], set()
    for pos, i in enumerate(order):
        if i in dropped:
            continue
        keep.append(i)
        dropped |= {j for j in order[pos + 1:] if iou[i, j] > threshold}
    return keep


def _random_boxes(rng, n):
    xy = rng.uniform(0, 50, (n, 2)).round(1)
    return np.concatenate([xy, xy + rng.uniform(1, 20, (n, 2)).round(1)], axis=1)


def test_box_iou_area_convert_and_clip_as_torchvision():
    rng = np.random.default_rng(4)
    b1, b2 = _random_boxes(rng, 6), _random_boxes(rng, 5)
    got = vops.box_iou(cn.tensor(b1, dtype=cn.float32), cn.tensor(b2, dtype=cn.float32))
    want = _iou_reference(torch.tensor(b1, dtype=torch.float32), torch.tensor(b2, dtype=torch.float32))
    assert np.array_equal(_np(got), want.numpy())
    half_area = vops.box_area(cn.tensor(b1, dtype=cn.float16))
    assert half_area.dtype == cn.float32  # NOTE: torchvision's upcast
    for fmt in ("xywh", "cxcywh"):
        there = vops.box_convert(cn.tensor(b1), "xyxy", fmt)
        np.testing.assert_allclose(_np(vops.box_convert(there, fmt, "xyxy")), b1, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_np(vops.box_convert(cn.tensor(b1), "xyxy", "cxcywh"))[:, :2],
                               (b1[:, :2] + b1[:, 2:]) / 2)
    np.testing.assert_allclose(_np(vops.box_convert(cn.tensor(b1), "xywh", "cxcywh"))[:, :2],
                               b1[:, :2] + b1[:, 2:] / 2)
    clipped = _np(vops.clip_boxes_to_image(cn.tensor(b1), (30, 20)))
    assert np.array_equal(clipped[:, 0::2], b1[:, 0::2].clip(0, 20))
    assert np.array_equal(clipped[:, 1::2], b1[:, 1::2].clip(0, 30))
    with pytest.raises(ValueError, match="Unsupported Bounding Box Conversions"):
        vops.box_convert(cn.tensor(b1), "xyxy", "xyzz")
    with pytest.raises(ValueError, match=r"shape \(N, 4\)"):
        vops.box_iou(cn.ones(3, 5), cn.ones(3, 4))
    with pytest.raises(TypeError, match="boxes1 must be a Tensor"):
        vops.box_iou(b1, cn.ones(3, 4))
    with pytest.raises(ValueError, match=r"size must be \(height, width\)"):
        vops.clip_boxes_to_image(cn.tensor(b1), 30)
    with pytest.raises(ValueError, match=r"shape \(\.\.\., 4\)"):
        vops.clip_boxes_to_image(cn.ones(2, 3), (3, 3))
    with pytest.raises(TypeError, match="iou_threshold must be a number"):
        vops.nms(cn.tensor(b1), cn.ones(6), "0.5")


def test_nms_ties_by_hand():
    boxes = cn.tensor([[0, 0, 10, 10], [1, 1, 11, 11], [0, 0, 10, 10], [20, 20, 30, 30.0]])
    scores = cn.tensor([0.9, 0.9, 0.9, 0.5])
    # NOTE: equal scores keep index order: 0 first; IoU(0, 1) = 81 / 119 = 0.68 and IoU(0, 2) = 1 drop 1 and 2
    assert vops.nms(boxes, scores, 0.5).numpy().tolist() == [0, 3]
    # NOTE: at threshold 0.7, IoU 0.68 is not above it: 1 stays; 2 (IoU 1 with 0) goes
    assert vops.nms(boxes, scores, 0.7).numpy().tolist() == [0, 1, 3]
    # NOTE: an IoU equal to the threshold does not suppress (strictly greater): boxes of IoU exactly 0.5
    half = cn.tensor([[0, 0, 2, 1], [0, 0, 1, 1.0]])
    assert vops.nms(half, cn.tensor([0.5, 0.6]), 0.5).numpy().tolist() == [1, 0]
    # NOTE: batched: category 1 holds boxes 1 and 2 (IoU 0.68): 1 kept; merged by score, ties by index
    got = vops.batched_nms(boxes, scores, cn.tensor([0, 1, 1, 0]), 0.5)
    assert got.dtype == cn.int64 and got.numpy().tolist() == [0, 1, 3]
    assert vops.nms(cn.zeros(0, 4), cn.zeros(0), 0.5).numpy().tolist() == []
    with pytest.raises(ValueError, match="one score per box"):
        vops.nms(boxes, cn.ones(3), 0.5)
    with pytest.raises(ValueError, match="idxs must be an integer Tensor"):
        vops.batched_nms(boxes, scores, cn.ones(4), 0.5)


@pytest.mark.parametrize("seed", range(5))
def test_nms_matches_the_definition_on_random_boxes_with_tied_scores(seed):
    rng = np.random.default_rng(seed)
    boxes = _random_boxes(rng, 60)
    scores = rng.integers(0, 6, 60) / 8.0  # NOTE: few distinct values: many ties
    for threshold in (0.1, 0.45, 0.7):
        got = vops.nms(cn.tensor(boxes, dtype=cn.float32), cn.tensor(scores, dtype=cn.float32), threshold)
        want = _nms_reference(torch.tensor(boxes, dtype=torch.float32), torch.tensor(scores, dtype=torch.float32),
                              threshold)
        assert got.numpy().tolist() == want
        classes = rng.integers(0, 3, 60)
        got = vops.batched_nms(cn.tensor(boxes), cn.tensor(scores), cn.tensor(classes), threshold).numpy().tolist()
        want = sorted((i for c in range(3) for i in np.flatnonzero(classes == c)[
            _nms_reference(torch.tensor(boxes[classes == c]), torch.tensor(scores[classes == c]), threshold)]),
            key=lambda i: (-scores[i], i))
        assert got == [int(i) for i in want]


# ----------------------------------------------------------------------------- the runner: versions, names
def test_under_the_runner_torch_reads_as_the_release_cupynet_follows(tmp_path, capsys):
    rc, out, err = _run(tmp_path, capsys, """
        import importlib.metadata, warnings
        from packaging import version
        import torch, torchvision, cupynet
        from torch.nn.modules.conv import _ConvNd
        from torch.nn.utils.fusion import fuse_conv_bn_eval
        from torch.utils._pytree import tree_flatten
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
        assert version.parse(torch.__version__) >= version.parse("1.13") and torch.__version__ == "2.13.0+cupynet"
        assert version.parse(torch.__version__).local == "cupynet" and cupynet.__version__ == "0.1.0"
        assert importlib.metadata.version("torch") == torch.__version__
        assert importlib.metadata.version("torchvision") == torchvision.__version__ == "0.28.0+cupynet"
        assert torchvision.ops.nms(torch.tensor([[0., 0, 1, 1]]), torch.tensor([1.]), 0.5).tolist() == [0]
        assert torch.jit.script(len) is len and not torch.jit.is_scripting()
        assert isinstance(torch.nn.parallel.DataParallel(torch.nn.Linear(1, 1)), torch.nn.Module)
        torch.set_printoptions(linewidth=320, precision=5, profile="long")
        print(tree_flatten({"a": [1, 2]})[0], torch.tensor([5, -5]) % 3)
    """)
    assert rc == 0, err
    assert out.strip() == "[1, 2] tensor([2, 1])"
    cn.set_printoptions(profile="default")


def test_a_package_the_runner_does_not_map_is_still_reported_missing(tmp_path, capsys):
    rc, _, err = _run(tmp_path, capsys, """
        import importlib.metadata
        importlib.metadata.version("torchaudio")
    """)
    assert rc == run.EXIT_MISSING and "cupynet has no torchaudio yet" in err
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert importlib.metadata.version("torch") == torch.__version__  # NOTE: outside the run: the real one


# ----------------------------------------------------------------------------- torch.dtype
DTYPE_NAMES = ["float16", "bfloat16", "float32", "float64", "int8", "uint8", "int16", "int32", "int64", "bool"]


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_dtype_objects_carry_torchs_attributes(name):
    ours, theirs = getattr(cn, name), getattr(torch, name)
    assert isinstance(ours, cn.dtype) and isinstance(cn.zeros(1, dtype=ours).dtype, cn.dtype)
    for attribute in ("is_floating_point", "is_complex", "is_signed", "itemsize"):
        assert getattr(ours, attribute) == getattr(theirs, attribute), attribute
    assert ours.to_real().name == str(theirs.to_real()).replace("torch.", "")
    try:
        want = str(theirs.to_complex()).replace("torch.", "")
    except RuntimeError:
        want = None
    if want is None or want == "complex32":  # NOTE: cupynet has no complex32 (torch's to_complex of float16)
        with pytest.raises(RuntimeError, match="Unknown Complex ScalarType"):
            ours.to_complex()
    else:
        assert ours.to_complex().name == want and ours.to_complex().is_complex


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_dtype_objects_stand_for_their_numpy_dtype(name):
    import pickle  # noqa: PLC0415
    ours, numpy_dtype = getattr(cn, name), cn.dtypes.as_dtype(name)
    t = cn.zeros(2, dtype=ours)
    assert t.dtype is ours and t.dtype == numpy_dtype and numpy_dtype == t.dtype and hash(ours) == hash(numpy_dtype)
    assert t.dtype == numpy_dtype.type and numpy_dtype.type == t.dtype and t.dtype == numpy_dtype.name
    assert not (t.dtype != numpy_dtype) and {numpy_dtype: 1}[t.dtype] == 1 and {ours: 2}[numpy_dtype] == 2
    assert np.zeros(1, dtype=ours).dtype == numpy_dtype and np.dtype(ours) == numpy_dtype
    assert pickle.loads(pickle.dumps(ours)) is ours and str(ours) == str(numpy_dtype)
    assert ours.kind == numpy_dtype.kind and ours.type is numpy_dtype.type
    with pytest.raises(AttributeError, match="immutable"):
        ours.is_signed = False


def test_default_dtype_and_an_ema_update_read_dtype_attributes():
    assert cn.get_default_dtype().is_floating_point and cn.get_default_dtype() == np.float32
    model = cn.nn.Sequential(cn.nn.Linear(2, 2), cn.nn.BatchNorm1d(2))
    ema = {k: v.clone() for k, v in model.state_dict().items()}
    with cn.no_grad():
        for k, v in ema.items():
            if v.dtype.is_floating_point:  # NOTE: YOLOv5's ModelEMA.update
                v *= 0.5
                v += 0.5 * model.state_dict()[k].detach()
    assert ema["1.num_batches_tracked"].dtype == cn.int64 and not ema["1.num_batches_tracked"].dtype.is_floating_point
    assert cn.float16 != cn.float32 and cn.float32 != np.float64 and cn.float32 != "nonsense"


def test_dtype_objects_save_and_load_as_dtype_objects(tmp_path):
    import numpy  # noqa: PLC0415
    cn.save({"d": cn.ones(1).dtype, "b": cn.bfloat16, "n": numpy.dtype("float16")}, tmp_path / "d.pt")
    back = cn.load(tmp_path / "d.pt")
    assert back["d"] is cn.float32 and back["b"] is cn.bfloat16 and back["n"] is cn.float16


def test_a_yolov5_shaped_training_loop_runs_under_the_runner(tmp_path, capsys, monkeypatch):
    # NOTE: the patterns of YOLOv5's train.py that met the gaps above, in one small program (the real one could
    # not be fetched here): InfiniteDataLoader, a collate_fn with paths and shapes, ModelEMA, AMP off on the CPU,
    # a checkpoint holding Path options, NMS in validation, version checks
    monkeypatch.chdir(tmp_path)
    rc, out, err = _run(tmp_path, capsys, """
        import math, warnings
        from copy import deepcopy
        from pathlib import Path
        import numpy as np
        import torch, torch.nn as nn, torchvision
        from torch.utils.data import Dataset, dataloader
        from packaging.version import parse
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
        torch.set_printoptions(linewidth=320, precision=5, profile="long")
        assert parse(torch.__version__) >= parse("1.13.0")

        class Images(Dataset):
            def __len__(self):
                return 8
            def __getitem__(self, i):
                labels = torch.tensor([[0, i % 3, 0.5, 0.5, 0.2, 0.2]], dtype=torch.float32)
                return torch.full((3, 16, 16), i / 8.0), labels, f"im{i}.jpg", ((16, 16), ((1.0, 1.0), (0.0, 0.0)))
            @staticmethod
            def collate_fn(batch):
                im, label, path, shapes = zip(*batch)
                for i, lb in enumerate(label):
                    lb[:, 0] = i
                return torch.stack(im, 0), torch.cat(label, 0), path, shapes

        class _RepeatSampler:
            def __init__(self, sampler):
                self.sampler = sampler
            def __iter__(self):
                while True:
                    yield from iter(self.sampler)

        class InfiniteDataLoader(dataloader.DataLoader):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                object.__setattr__(self, "batch_sampler", _RepeatSampler(self.batch_sampler))
                self.iterator = super().__iter__()
            def __len__(self):
                return len(self.batch_sampler.sampler)
            def __iter__(self):
                for _ in range(len(self)):
                    yield next(self.iterator)

        model = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), nn.SiLU(), nn.Conv2d(8, 6, 1))
        ema = deepcopy(model).eval()
        for p in ema.parameters():
            p.requires_grad_(False)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, nesterov=True)
        scaler = torch.cuda.amp.GradScaler(enabled=False)
        loader = InfiniteDataLoader(Images(), batch_size=4, shuffle=True, num_workers=0,
                                    collate_fn=Images.collate_fn)
        for epoch in range(2):
            for i, (imgs, targets, paths, _) in enumerate(loader):
                with torch.cuda.amp.autocast(enabled=False):
                    pred = model(imgs)
                    loss = (pred.sigmoid() - targets[:, 1].mean() / 3).pow(2).mean()
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
                opt.zero_grad()
                with torch.no_grad():
                    d = 0.9 * (1 - math.exp(-(epoch * 2 + i + 1) / 2000))
                    msd = model.state_dict()
                    for k, v in ema.state_dict().items():
                        if v.dtype.is_floating_point:
                            v *= d
                            v += (1 - d) * msd[k].detach()
            assert len(paths) == 4 and paths[0].endswith(".jpg")
        xywh = torch.tensor([[8.0, 8.0, 4.0, 4.0], [8.5, 8.5, 4.0, 4.0], [2.0, 2.0, 2.0, 2.0]])
        boxes = torchvision.ops.box_convert(xywh, "cxcywh", "xyxy")
        offsets = (torch.tensor([0, 0, 1]) % 2 * 4096)[:, None]
        keep = torchvision.ops.nms(boxes + offsets, torch.tensor([.9, .8, .7]), 0.45)
        ckpt = {"epoch": 1, "model": deepcopy(ema).half(), "opt": {"save_dir": Path("runs/exp"), "epochs": 2},
                "date": "today"}
        torch.save(ckpt, "last.pt")
        back = torch.load("last.pt", weights_only=False)
        assert back["opt"]["save_dir"] == Path("runs/exp") and isinstance(back["opt"]["save_dir"], Path)
        print(keep.tolist(), round(float(loss), 3) >= 0, len(loader))
    """)
    assert rc == 0, err
    assert out.strip() == "[0, 2] True 2"  # NOTE: len(loader): the batches of one pass, as torch's
    cn.set_printoptions(profile="default")


# ----------------------------------------------------------------------------- val.py/detect.py and thop
@pytest.mark.parametrize("make", [lambda m: m.tensor(3) > 1, lambda m: m.tensor(2), lambda m: m.tensor([True])])
def test_a_python_sequence_times_a_tensor_repeats_as_in_torch(make):
    for seq in ("s", b"ab", [1, None], (2,)):
        assert seq * make(cn) == seq * make(torch) and make(cn) * seq == make(torch) * seq


def test_a_sequence_times_a_float_or_long_tensor_is_refused_as_in_torch():
    for bad in (cn.tensor(2.0), cn.tensor([1, 2])):
        with pytest.raises(TypeError, match="only integer tensors of a single element"):
            _ = "s" * bad
    assert (cn.tensor([1, 2]) * 3).tolist() == [3, 6] and (cn.tensor(2) * cn.tensor([1, 2])).tolist() == [2, 4]


def test_hub_downloads_into_place_and_checks_the_hash_as_torch(tmp_path, monkeypatch):
    import hashlib

    import torch.hub as thub

    from cupynet.compat import hub
    src = tmp_path / "asset.bin"
    src.write_bytes(bytes(range(256)) * 100)
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    for mod, name in ((hub, "ours"), (thub, "theirs")):
        mod.download_url_to_file(src.as_uri(), tmp_path / f"{name}.bin", hash_prefix=digest[:8], progress=False)
        assert (tmp_path / f"{name}.bin").read_bytes() == src.read_bytes()
        with pytest.raises(RuntimeError, match="invalid hash value") as caught:
            mod.download_url_to_file(src.as_uri(), str(tmp_path / f"bad_{name}.bin"), hash_prefix="0000",
                                     progress=False)
        assert not (tmp_path / f"bad_{name}.bin").exists() and str(caught.value).endswith(f'got "{digest}")')
    assert sorted(p.name for p in tmp_path.iterdir()) == ["asset.bin", "ours.bin", "theirs.bin"]  # no leftovers
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "th"))
    assert hub.get_dir() == thub.get_dir() == str(tmp_path / "th" / "hub")


def test_hub_and_mobile_optimizer_under_the_runner(tmp_path, capsys):
    cn.save({"w": cn.ones(2)}, tmp_path / "w-0.pt")
    rc, out, err = _run(tmp_path, capsys, f"""
        import torch
        from torch.utils.mobile_optimizer import optimize_for_mobile
        torch.hub.set_dir({str(tmp_path / "cache")!r})
        sd = torch.hub.load_state_dict_from_url({(tmp_path / "w-0.pt").as_uri()!r}, progress=False)
        print(sd["w"].tolist(), torch.hub.get_dir().endswith("cache"))
        try:
            optimize_for_mobile(torch.nn.Linear(1, 1))
        except NotImplementedError as e:
            print("refused:", "no TorchScript" in str(e))
        print(hasattr(torch.overrides, "TorchFunctionMode"))  # NOTE: an empty module: thop then counts no functions
    """)
    assert rc == 0, err
    assert out.split("\n")[:3] == ["[1.0, 1.0] True", "refused: True", "False"]
    assert (tmp_path / "cache" / "checkpoints" / "w-0.pt").exists()


PRIVATE_BASES = {"batchnorm": ("_BatchNorm", "_NormBase"), "dropout": ("_DropoutNd",),
                 "padding": ("_ConstantPadNd", "_ReflectionPadNd", "_ReplicationPadNd", "_CircularPadNd"),
                 "pooling": ("_AdaptiveAvgPoolNd", "_AdaptiveMaxPoolNd", "_AvgPoolNd", "_MaxPoolNd")}
LAYERS = [("BatchNorm2d", (4,)), ("InstanceNorm2d", (4,)), ("Dropout", ()), ("ZeroPad2d", (1,)),
          ("ConstantPad1d", (1, 0.5)), ("ReflectionPad2d", (1,)), ("ReplicationPad3d", (1,)), ("CircularPad1d", (1,)),
          ("AdaptiveAvgPool2d", (1,)), ("MaxPool2d", (2,)), ("AvgPool1d", (2,))]


@pytest.mark.parametrize("layer,args", LAYERS)
def test_the_private_bases_flop_counters_key_on_classify_layers_as_torch(layer, args):
    ours, theirs = getattr(cn.nn, layer)(*args), getattr(torch.nn, layer)(*args)
    for sub, names in PRIVATE_BASES.items():
        for name in names:
            base = getattr(importlib.import_module(f"cupynet.compat.nn_modules.{sub}"), name)
            tbase = getattr(importlib.import_module(f"torch.nn.modules.{sub}"), name)
            assert isinstance(ours, base) == isinstance(theirs, tbase), (layer, name)
