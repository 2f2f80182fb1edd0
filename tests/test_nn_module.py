"""Module machinery: registration, iteration, state_dict keys/loading, to(), modes, hooks, repr."""

import copy

import numpy as np
import pytest

import cupynet as cn
from cupynet import nn


def _mlp():
    return nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))


def _torch_state(module):
    return {k: v.detach().numpy() for k, v in module.state_dict().items()}


class Custom(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)
        self.scale = nn.Parameter(cn.ones(2))
        self.register_buffer("steps", cn.zeros(()))
        self.register_buffer("scratch", cn.zeros(3), persistent=False)
        self.blocks = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2)])
        self.heads = nn.ModuleDict({"a": nn.Linear(2, 1)})

    def forward(self, x):
        return self.fc(x) * self.scale


def test_registration_and_naming():
    m = Custom()
    names = [n for n, _ in m.named_parameters()]
    assert names == ["scale", "fc.weight", "fc.bias", "blocks.0.weight", "blocks.0.bias", "blocks.1.weight",
                     "blocks.1.bias", "heads.a.weight", "heads.a.bias"]
    assert [n for n, _ in m.named_buffers()] == ["steps", "scratch"]
    assert list(m.state_dict()) == ["scale", "steps", "fc.weight", "fc.bias", "blocks.0.weight", "blocks.0.bias",
                                    "blocks.1.weight", "blocks.1.bias", "heads.a.weight", "heads.a.bias"]
    assert [n for n, _ in m.named_modules()] == ["", "fc", "blocks", "blocks.0", "blocks.1", "heads", "heads.a"]
    assert [n for n, _ in m.named_children()] == ["fc", "blocks", "heads"]
    assert m.get_submodule("blocks.1") is m.blocks[1]
    assert len(list(m.parameters(recurse=False))) == 1


def test_shared_parameter_listed_once():
    shared = nn.Linear(2, 2)
    m = nn.Sequential(shared, shared)
    assert len(list(m.parameters())) == 2
    assert list(m.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]


def test_bad_assignments_raise_clearly():
    m = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="cannot assign 'Tensor' as parameter 'weight'"):
        m.weight = cn.zeros(2, 2)
    with pytest.raises(KeyError, match="buffer name can.*t contain.*got: a.b"):
        m.register_buffer("a.b", cn.zeros(1))
    with pytest.raises(TypeError, match="buffer 'x'"):
        m.register_buffer("x", np.zeros(1))
    with pytest.raises(KeyError, match="already exists"):
        m.register_buffer("in_features", cn.zeros(1))
    with pytest.raises(AttributeError, match="'Linear' object has no attribute 'nope'"):
        _ = m.nope

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(cn.zeros(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()


def test_forward_missing_is_clear():
    with pytest.raises(NotImplementedError, match='Module \\[Module\\] is missing the required "forward"'):
        nn.Module()(1)


def test_repr_matches_torch():
    torch = pytest.importorskip("torch")
    m = nn.Sequential(nn.Conv2d(1, 6, 5, padding=2, bias=False), nn.BatchNorm2d(6), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Flatten(), nn.Dropout(0.25), nn.Linear(6, 2), nn.GELU(approximate="tanh"),
                      nn.LayerNorm(2), nn.Softmax(dim=1))
    t = torch.nn.Sequential(torch.nn.Conv2d(1, 6, 5, padding=2, bias=False), torch.nn.BatchNorm2d(6),
                            torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Dropout(0.25),
                            torch.nn.Linear(6, 2), torch.nn.GELU(approximate="tanh"), torch.nn.LayerNorm(2),
                            torch.nn.Softmax(dim=1))
    assert repr(m) == repr(t)
    assert repr(nn.MultiheadAttention(4, 2)) == repr(torch.nn.MultiheadAttention(4, 2))
    assert repr(nn.Embedding(10, 3, padding_idx=0)) == repr(torch.nn.Embedding(10, 3, padding_idx=0))
    assert repr(nn.GroupNorm(2, 4)) == repr(torch.nn.GroupNorm(2, 4))


@pytest.mark.parametrize("builder", ["mlp", "cnn", "bn", "mha", "encoder_layer", "encoder"])
def test_state_dict_keys_match_torch(builder):
    torch = pytest.importorskip("torch")

    def build(lib):
        return {
            "mlp": lambda: lib.Sequential(lib.Flatten(), lib.Linear(4, 8), lib.ReLU(), lib.Dropout(0.1),
                                          lib.Linear(8, 2)),
            "cnn": lambda: lib.Sequential(lib.Conv2d(1, 4, 3), lib.ReLU(), lib.MaxPool2d(2), lib.Conv1d(4, 4, 3),
                                          lib.ConvTranspose2d(4, 2, 2), lib.Embedding(5, 2), lib.GroupNorm(1, 2)),
            "bn": lambda: lib.Sequential(lib.BatchNorm1d(3), lib.BatchNorm2d(4, affine=False),
                                         lib.BatchNorm2d(2, track_running_stats=False), lib.LayerNorm((2, 3))),
            "mha": lambda: lib.MultiheadAttention(8, 2, batch_first=True),
            "encoder_layer": lambda: lib.TransformerEncoderLayer(8, 2, 16, batch_first=True),
            "encoder": lambda: lib.TransformerEncoder(lib.TransformerEncoderLayer(8, 2, 16), 2,
                                                      norm=lib.LayerNorm(8)),
        }[builder]()

    ours, theirs = build(nn), build(torch.nn)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for key, value in theirs.state_dict().items():
        assert tuple(ours.state_dict()[key].shape) == tuple(value.shape), key
        assert str(ours.state_dict()[key].dtype) == str(value.dtype).removeprefix("torch."), key
    ours.load_state_dict(theirs.state_dict())  # torch tensors, duck-typed
    for key, value in theirs.state_dict().items():
        np.testing.assert_array_equal(ours.state_dict()[key].numpy(), value.numpy())


def test_load_accepts_tensors_and_arrays_and_casts():
    m = nn.Linear(2, 2, dtype=cn.float16)
    weight = m.weight
    m.load_state_dict({"weight": np.arange(4, dtype=np.float64).reshape(2, 2), "bias": cn.tensor([5.0, 6.0])})
    assert m.weight is weight and m.weight.dtype == cn.float16
    np.testing.assert_array_equal(m.weight.detach().numpy(), [[0, 1], [2, 3]])
    np.testing.assert_array_equal(m.bias.detach().numpy(), [5, 6])


def test_strict_load_lists_everything_and_changes_nothing():
    m = _mlp()
    before = {k: v.numpy().copy() for k, v in m.state_dict().items()}
    bad = {k: np.ones(v.shape, np.float32) for k, v in before.items()}
    del bad["0.bias"], bad["2.weight"]
    bad["0.weight"] = np.ones((5, 4), np.float32)
    bad["extra"] = np.ones(1, np.float32)
    with pytest.raises(RuntimeError) as info:
        m.load_state_dict(bad)
    text = str(info.value)
    assert text.startswith("Error(s) in loading state_dict for Sequential:")
    assert 'Missing key(s) in state_dict: "0.bias", "2.weight".' in text
    assert 'Unexpected key(s) in state_dict: "extra".' in text
    assert "size mismatch for 0.weight: copying a param with shape (5, 4) from checkpoint, the shape in " \
           "current model is (3, 4)." in text
    for k, v in m.state_dict().items():  # 2.bias was loadable but nothing was copied
        np.testing.assert_array_equal(v.numpy(), before[k])


def test_non_strict_load_returns_keys():
    m = _mlp()
    state = {"0.weight": np.zeros((3, 4), np.float32), "junk": np.zeros(1)}
    result = m.load_state_dict(state, strict=False)
    assert result.missing_keys == ["0.bias", "2.weight", "2.bias"] and result.unexpected_keys == ["junk"]
    assert float(np.abs(m[0].weight.detach().numpy()).sum()) == 0.0
    with pytest.raises(RuntimeError, match="size mismatch for 0.weight"):
        m.load_state_dict({"0.weight": np.zeros((1, 4))}, strict=False)


def test_load_rejects_non_arrays_and_non_mappings():
    m = nn.Linear(2, 1)
    with pytest.raises(TypeError, match="dict-like"):
        m.load_state_dict([("weight", np.zeros((1, 2)))])
    with pytest.raises(RuntimeError, match="value of key 'bias'.*got str"):
        m.load_state_dict({"weight": np.zeros((1, 2)), "bias": "zero"})


def test_state_dict_values_share_memory_and_prefix():
    m = nn.Linear(2, 1)
    sd = m.state_dict(prefix="enc.")
    assert list(sd) == ["enc.weight", "enc.bias"]
    assert sd["enc.weight"].array is m.weight.array and not sd["enc.weight"].requires_grad
    assert m.state_dict(keep_vars=True)["weight"] is m.weight


def test_to_dtype_keeps_identity_and_bn_stats_fp32():
    m = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3))
    weight = m[0].weight
    m[0].weight.grad = cn.ones(3, 3)
    m.half()
    assert m[0].weight is weight and weight.dtype == cn.float16 and weight.grad.dtype == cn.float16
    assert m[1].weight.dtype == cn.float16
    assert m[1].running_mean.dtype == cn.float32 and m[1].running_var.dtype == cn.float32
    assert m[1].num_batches_tracked.dtype == cn.int64
    m.bfloat16()
    assert weight.dtype == cn.bfloat16 and m[1].running_var.dtype == cn.float32
    m.double()
    assert weight.dtype == cn.float64 and m[1].running_var.dtype == cn.float64
    m.to(dtype=cn.float32)
    assert weight.dtype == cn.float32 and m[1].running_var.dtype == cn.float32
    m.to("cpu")
    assert weight.device == cn.device("cpu")


def test_to_rejects_bad_arguments_and_changes_nothing():
    m = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="only accepts floating point dtypes, but got desired dtype=int64"):
        m.to(cn.int64)
    with pytest.raises(TypeError, match="expected a device, a dtype or a Tensor, got 3"):
        m.to(3)
    assert m.weight.dtype == cn.float32


def test_train_eval_zero_grad_apply_requires_grad():
    m = _mlp()
    assert m.training and m[0].training
    m.eval()
    assert not m.training and not m[2].training
    m.train()
    assert m[1].training
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        m.train("yes")
    for p in m.parameters():
        p.grad = cn.ones(*p.shape)
    m.zero_grad(set_to_none=False)
    assert all(float(np.abs(p.grad.numpy()).sum()) == 0 for p in m.parameters())
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())
    seen = []
    m.apply(lambda mod: seen.append(type(mod).__name__))
    assert seen == ["Linear", "ReLU", "Linear", "Sequential"]
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())


def test_forward_hooks():
    m = nn.Linear(2, 2)
    calls = []
    handle = m.register_forward_hook(lambda mod, args, out: calls.append(out.shape) or out * 0)
    pre = m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
    out = m(cn.ones(1, 2))
    assert calls == [(1, 2)] and float(np.abs(out.detach().numpy()).sum()) == 0
    handle.remove()
    pre.remove()
    assert float(np.abs(m(cn.ones(1, 2)).detach().numpy()).sum()) > 0


def test_containers():
    seq = _mlp()
    assert len(seq) == 3 and isinstance(seq[1], nn.ReLU) and seq[-1] is seq[2]
    head = seq[1:]
    assert isinstance(head, nn.Sequential) and list(head.state_dict()) == ["2.weight", "2.bias"]
    seq.append(nn.Tanh())
    assert len(seq) == 4 and isinstance(seq[3], nn.Tanh)
    del seq[1]
    assert [type(m).__name__ for m in seq] == ["Linear", "Linear", "Tanh"] and "1.weight" in seq.state_dict()
    with pytest.raises(IndexError, match="index 7 is out of range"):
        seq[7]
    ml = nn.ModuleList([nn.Linear(1, 1)])
    ml.append(nn.Linear(1, 1))
    ml += [nn.ReLU()]
    assert len(ml) == 3 and list(ml.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]
    with pytest.raises(TypeError, match="iterable of Modules"):
        ml.extend(nn.ReLU())
    md = nn.ModuleDict({"b": nn.Linear(1, 1)})
    md["a"] = nn.ReLU()
    assert list(md.keys()) == ["b", "a"] and "a" in md
    with pytest.raises(KeyError, match="no key 'z'"):
        md["z"]


def test_parameter_basics_and_deepcopy():
    p = nn.Parameter(cn.ones(2))
    assert p.requires_grad and p.is_leaf and isinstance(p, cn.Tensor)
    assert repr(p).startswith("Parameter containing:\ntensor(")
    m = _mlp()
    clone = copy.deepcopy(m)
    assert isinstance(clone[0].weight, nn.Parameter) and clone[0].weight is not m[0].weight
    np.testing.assert_array_equal(clone[0].weight.detach().numpy(), m[0].weight.detach().numpy())
    clone[0].weight.array[...] = 0
    assert float(np.abs(m[0].weight.detach().numpy()).sum()) > 0


# the functional names the nn layers and everyday training code call (torch.nn.functional's spelling)
LAYER_FUNCTIONAL = (
    "linear", "conv1d", "conv2d", "conv_transpose2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d",
    "dropout", "relu", "leaky_relu", "gelu", "silu", "tanh", "sigmoid", "softplus", "softmax", "log_softmax",
    "layer_norm", "batch_norm", "group_norm", "embedding", "scaled_dot_product_attention", "cross_entropy",
    "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "kl_div", "one_hot", "normalize",
)


def test_functional_reexports_the_ops():
    from cupynet.nn import functional as F

    for name in LAYER_FUNCTIONAL:
        assert getattr(F, name) is getattr(cn.ops, name), name
        assert name in F.__all__, name
    assert "OP_CLASSES" not in F.__all__ and "TENSOR_METHODS" not in F.__all__
    with pytest.raises(AttributeError, match="no_such_op"):
        _ = F.no_such_op


def test_model_under_autocast_keeps_fp32_state():
    amp = pytest.importorskip("cupynet.amp")
    m = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
    x = cn.randn(6, 4)
    with amp.autocast("cpu", dtype=cn.bfloat16):
        logits = m(x)
        loss = nn.CrossEntropyLoss()(logits, cn.tensor([0, 1, 2, 0, 1, 2]))
    assert logits.dtype == cn.bfloat16 and loss.dtype == cn.float32
    assert m[1].running_mean.dtype == cn.float32 and int(m[1].num_batches_tracked.item()) == 1
    loss.backward()
    assert all(p.dtype == cn.float32 and p.grad.dtype == cn.float32 for p in m.parameters())


def test_reassigned_child_and_parameter_keep_their_place():
    # NOTE: PyTorch keeps the slot: list(model.children())[:-1] idioms (a backbone without its head) rely on it
    m = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    setattr(m, "0", nn.Linear(2, 3))  # NOTE: through __setattr__, as model.conv1 = ... is
    m.extra = nn.Tanh()
    m.extra = nn.Sigmoid()
    assert [type(c).__name__ for c in m.children()] == ["Linear", "ReLU", "Linear", "Sigmoid"]
    lin = nn.Linear(2, 2)
    lin.weight = nn.Parameter(cn.zeros(2, 2))
    assert list(lin.state_dict()) == ["weight", "bias"]


def test_get_parameter_and_get_buffer_match_torch():
    torch = pytest.importorskip("torch")
    for lib in (cn, torch):
        m = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4))
        assert m.get_parameter("0.weight") is m[0].weight
        assert m.get_buffer("1.running_mean") is m[1].running_mean
        for call, target, match in [(m.get_parameter, "1.running_mean", "is not an nn.Parameter"),
                                    (m.get_buffer, "0.weight", "is not a buffer"),
                                    (m.get_parameter, "0.nothing", "has no attribute `nothing`"),
                                    (m.get_buffer, "7.running_mean", "has no")]:
            with pytest.raises(AttributeError, match=match):
                call(target)
    with pytest.raises(TypeError, match="target must be a dotted name"):
        cn.nn.Linear(2, 2).get_parameter(3)
