"""Whole objects as data: ``save(model)`` / ``load`` with torch's allow-list (issue 13).

Round trips (tied weights, cycles, function references, ``__main__`` classes across processes), the
allow-list compared call for call with torch's ``weights_only`` loader, and hostile object records.
"""

import io
import json
import math
import os
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest

import cupynet as cn
import cupynet.nn.functional as F
from cupynet import serialization
from cupynet.serialization import (
    CheckpointError,
    WeightsOnlyError,
    add_safe_globals,
    clear_safe_globals,
    get_safe_globals,
    load,
    safe_globals,
    save,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = sys.executable


@pytest.fixture(autouse=True)
def empty_allow_list():
    clear_safe_globals()
    yield
    clear_safe_globals()


class TinyLM(cn.nn.Module):
    """word_language_model's RNNModel in small: embedding, LSTM, decoder tied to the embedding."""

    def __init__(self, tied=True):
        super().__init__()
        self.drop = cn.nn.Dropout(0.0)
        self.encoder = cn.nn.Embedding(11, 6)
        self.rnn = cn.nn.LSTM(6, 6, 2)
        self.decoder = cn.nn.Linear(6, 11)
        if tied:
            self.decoder.weight = self.encoder.weight
        self.model_type = "LSTM"

    def forward(self, x):
        out, _ = self.rnn(self.drop(self.encoder(x)))
        return self.decoder(out)


LM_CLASSES = [TinyLM, cn.nn.Dropout, cn.nn.Embedding, cn.nn.LSTM, cn.nn.Linear]


class Counted:
    """A class whose ``__init__`` and ``__setstate__`` count calls: loading must call neither."""

    calls = 0

    def __init__(self):
        Counted.calls += 1
        self.value = 1

    def __setstate__(self, state):
        Counted.calls += 1


class OwnNew:
    """A class with its own ``__new__``: not rebuilt from data."""

    def __new__(cls):
        return super().__new__(cls)


class Slotted:
    """A class with ``__slots__``: its state is not in ``__dict__``."""

    __slots__ = ("a",)


def round_trip(obj, **kw):
    buffer = io.BytesIO()
    save(obj, buffer)
    buffer.seek(0)
    return load(buffer, **kw)


def manifest_of(obj):
    buffer = io.BytesIO()
    save(obj, buffer)
    with zipfile.ZipFile(buffer) as zf:
        return json.loads(zf.read("manifest.json"))


def test_a_model_round_trips_with_the_same_outputs_and_tied_weights():
    cn.manual_seed(0)
    model = TinyLM()
    x = cn.tensor(np.random.default_rng(0).integers(0, 11, (5, 3)))
    with safe_globals(LM_CLASSES):
        loaded = round_trip(model)
    assert type(loaded) is TinyLM and loaded is not model
    np.testing.assert_array_equal(loaded(x).array, model(x).array)  # the same weights, bit for bit
    assert loaded.decoder.weight is loaded.encoder.weight  # tied stays tied
    assert isinstance(loaded.encoder.weight, cn.nn.Parameter) and loaded.encoder.weight.requires_grad
    assert [n for n, _ in loaded.named_parameters()] == [n for n, _ in model.named_parameters()]
    assert type(loaded._parameters).__name__ == "OrderedDict" and loaded.model_type == "LSTM"
    # the tied weight is one array in the file
    assert len(manifest_of(model)["arrays"]) == len(list(model.parameters()))
    loaded(x).sum().backward()  # it trains: gradients reach the (shared) parameters
    assert loaded.encoder.weight.grad is not None


def test_a_transformer_layer_holds_relu_by_name():
    cn.manual_seed(0)
    layer = cn.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
    assert layer.activation is F.relu  # as torch's layer holds it
    x = cn.randn(4, 2, 8)
    needed = [cn.nn.TransformerEncoderLayer, cn.nn.MultiheadAttention, cn.nn.Linear, cn.nn.Dropout,
              cn.nn.LayerNorm, cn.nn.modules.linear.NonDynamicallyQuantizableLinear]
    with pytest.raises(WeightsOnlyError, match=r"GLOBAL cupynet\.ops\.activation\.relu was not an allowed global"):
        with safe_globals(needed):
            round_trip(layer)
    with safe_globals([*needed, F.relu]):
        loaded = round_trip(layer)
    assert loaded.activation is F.relu
    np.testing.assert_array_equal(loaded(x).array, layer(x).array)


def test_objects_that_refer_to_each_other_keep_their_identity():
    parent = Counted()
    child = Counted()
    parent.child, child.parent, parent.itself = child, parent, parent
    calls = Counted.calls
    with safe_globals([Counted]):
        loaded = round_trip({"a": parent, "b": [child]})
    assert Counted.calls == calls  # neither __init__ nor __setstate__ ran
    assert loaded["a"].child is loaded["b"][0] and loaded["b"][0].parent is loaded["a"]
    assert loaded["a"].itself is loaded["a"]


def test_containers_of_version_two_round_trip():
    from collections import OrderedDict
    obj = {"o": OrderedDict([("b", 1), ("a", 2)]), "s": {1, (2, 3)}, "f": math.sqrt, "c": cn.nn.Linear}
    with safe_globals([math.sqrt, cn.nn.Linear]):
        got = round_trip(obj)
    assert type(got["o"]) is OrderedDict and list(got["o"]) == ["b", "a"]
    assert got["s"] == {1, (2, 3)} and got["f"] is math.sqrt and got["c"] is cn.nn.Linear
    assert manifest_of(obj)["version"] == 2


def test_weights_only_false_imports_what_the_file_names():
    model = TinyLM()
    loaded = round_trip(model, weights_only=False)
    assert type(loaded) is TinyLM and loaded.decoder.weight is loaded.encoder.weight


@pytest.mark.parametrize("obj, message", [
    (lambda x: x, r"cannot save obj of type function: .*cannot be found again by its name .*<lambda>"),
    ({"m": OwnNew()}, r"cannot save obj\['m'\] of type OwnNew: OwnNew defines its own __new__"),
    ([object()], r"cannot save obj\[0\] of type object; checkpoints hold"),
    ({"s": Slotted()}, r"cannot save obj\['s'\] of type Slotted: Slotted keeps state in __slots__"),
    ({"u": np.sqrt}, r"cannot save obj\['u'\] of type ufunc"),
])
def test_save_refuses_objects_it_could_not_rebuild(tmp_path, obj, message):
    with pytest.raises(TypeError, match=message):
        save(obj, tmp_path / "c.ckpt")
    assert not list(tmp_path.iterdir())


# ---- the allow-list, call for call against torch ---------------------------------------------------------
def allow_list_story(lib, make_model, classes):
    """What load answers in each step of a story of allow-list calls: "ok" or the name it refused."""
    ser = lib.serialization
    buffer = io.BytesIO()
    lib.save(make_model(), buffer)

    def attempt(**kw):
        buffer.seek(0)
        try:
            lib.load(buffer, **kw)
            return "ok"
        except Exception as error:  # noqa: BLE001 - the story records the outcome
            text = str(error)
            return text[text.index("GLOBAL ") + 7:].split()[0].rsplit(".", 1)[1]

    base = len(ser.get_safe_globals())  # NOTE: torch lists a few of its own internal globals by default
    story = [attempt()]
    with ser.safe_globals(classes[:1]):
        story.append(attempt())  # the outer class allowed, the first inner one refused
        story.append(len(ser.get_safe_globals()) - base)
    with ser.safe_globals(classes):
        story.append(attempt())
        ser.add_safe_globals([classes[0]])  # added inside the block: gone after it, as in torch
    story += [len(ser.get_safe_globals()) - base, attempt()]
    ser.add_safe_globals(classes)
    story += [attempt(), len(ser.get_safe_globals()) - base]
    ser.clear_safe_globals()
    story += [attempt(), attempt(weights_only=False)]
    return story


def test_allow_list_semantics_match_torch():
    torch = pytest.importorskip("torch")
    saved = torch.serialization.get_safe_globals()
    try:
        theirs = allow_list_story(torch, lambda: torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU()),
                                  [torch.nn.Sequential, torch.nn.Linear, torch.nn.ReLU])
    finally:
        torch.serialization.clear_safe_globals()
        torch.serialization.add_safe_globals(saved)
    ours = allow_list_story(cn, lambda: cn.nn.Sequential(cn.nn.Linear(2, 2), cn.nn.ReLU()),
                            [cn.nn.Sequential, cn.nn.Linear, cn.nn.ReLU])
    assert ours == theirs == ["Sequential", "Linear", 1, "ok", 0, "Sequential", "ok", 3, "Sequential", "ok"]


def test_the_refusal_names_the_global_and_both_ways_to_allow_it():
    buffer = io.BytesIO()
    save(TinyLM(), buffer)
    buffer.seek(0)
    with pytest.raises(WeightsOnlyError) as info:
        load(buffer)
    text = str(info.value)
    name = f"{TinyLM.__module__}.TinyLM"
    assert f"GLOBAL {name} was not an allowed global" in text
    assert f"torch.serialization.add_safe_globals([{name}])" in text and "weights_only=False" in text
    assert isinstance(info.value, CheckpointError) and isinstance(info.value, __import__("pickle").UnpicklingError)


def test_a_pair_allows_an_object_under_another_name():
    with safe_globals([(TinyLM, "elsewhere.Model"), *LM_CLASSES[1:]]):
        manifest = manifest_of(TinyLM())
    # the file names TinyLM by its own name; allowing it under another name does not allow that one
    assert manifest["tree"]["__object__"] == [TinyLM.__module__, "TinyLM"]
    buffer = io.BytesIO()
    save(TinyLM(), buffer)
    buffer.seek(0)
    with safe_globals([(TinyLM, f"{TinyLM.__module__}.TinyLM"), *LM_CLASSES[1:]]):
        assert type(load(buffer)) is TinyLM


@pytest.mark.parametrize("call, message", [
    (lambda: add_safe_globals([3]), "expected classes or functions .* got int 3"),
    (lambda: add_safe_globals(cn.nn.Linear), "expected a list of classes or functions, got type"),
    (lambda: add_safe_globals([cn.nn.Linear, (cn.nn.ReLU, 5)]), r"a pair must be \(object, 'module.Name'\)"),
    (lambda: add_safe_globals([(cn.nn.ReLU, "not a name")]), "with a dotted name"),
    (lambda: safe_globals(["cupynet.nn.Linear"]), "expected classes or functions .* got str"),
])
def test_bad_allow_list_entries_are_refused_and_change_nothing(call, message):
    add_safe_globals([cn.nn.Linear])
    with pytest.raises(TypeError, match=message):
        call()
    assert get_safe_globals() == [cn.nn.Linear]


def test_bad_weights_only_value():
    buffer = io.BytesIO()
    save({"a": 1}, buffer)
    buffer.seek(0)
    with pytest.raises(TypeError, match="weights_only must be True, False or None, got 'yes'"):
        load(buffer, weights_only="yes")


# ---- hostile object records --------------------------------------------------------------------------------
def hostile(tree, allowed=(), arrays=None, **kw):
    """Load a file whose tree is ``tree`` (arrays: those of a saved ``{"w": ones(2)}`` when None)."""
    buffer = io.BytesIO()
    save({"w": cn.ones(2)}, buffer)
    with zipfile.ZipFile(buffer) as zf:
        entries = {n: zf.read(n) for n in zf.namelist()}
    manifest = json.loads(entries["manifest.json"])
    manifest.update(tree=tree, version=2)
    if arrays is not None:
        manifest["arrays"] = arrays
    entries["manifest.json"] = json.dumps(manifest).encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for name, raw in entries.items():
            zf.writestr(name, raw)
    out.seek(0)
    with safe_globals(list(allowed)):
        return load(out, **kw)


def state_of(cls_name="Counted", module=__name__, state=None, **extra):
    return {"__object__": [module, cls_name], "state": {"__dict__": []} if state is None else state, **extra}


TENSOR = {"__tensor__": 0}


@pytest.mark.parametrize("tree, allowed, message", [
    ({"__list__": [TENSOR, {"__objekt__": ["os", "system"]}]}, (), "unknown tree tag '__objekt__'"),
    ({"__list__": [TENSOR, {"__object__": ["os"]}]}, (), r"__object__ holds \['os'\], not a \[module, qualname\]"),
    ({"__list__": [TENSOR, {"__object__": "os.system"}]}, (), "not a .module, qualname. pair"),
    ({"__list__": [TENSOR, {"__object__": ["os", 7]}]}, (), "not a .module, qualname. pair"),
    ({"__list__": [TENSOR, {"__global__": ["os", "system"]}]}, (), "GLOBAL os.system was not an allowed global"),
    ({"__list__": [TENSOR, {"__global__": ["x", "f.<locals>.g"]}]}, (), "not a dotted Python name"),
    ({"__list__": [TENSOR, {"__global__": ["__import__('os')", "x"]}]}, (), "not a dotted Python name"),
    ({"__list__": [TENSOR, state_of(state={"__list__": []})]}, (Counted,), "state of .*Counted is list, not a dict"),
    ({"__list__": [TENSOR, state_of(state={"__dict__": [[1, 2]]})]}, (Counted,), "not a dict of attribute names"),
    ({"__list__": [TENSOR, {"__object__": [__name__, "Counted"]}]}, (Counted,), "Counted has no state"),
    ({"__list__": [TENSOR, state_of("OwnNew")]}, (OwnNew,), "OwnNew defines its own __new__"),
    ({"__list__": [TENSOR, state_of("dict", "builtins")]}, ((dict, "builtins.dict"),), "built-in type dict"),
    ({"__list__": [TENSOR, state_of("system", "os")]}, ((os.system, "os.system"),), "is not a class"),
    ({"__list__": [TENSOR, {"__memo__": 0}]}, (), "__memo__ refers to 0, which no earlier node defines"),
    ({"__list__": [{"__tensor__": 0, "memo": 0}, state_of(memo=0)]}, (Counted,), "memo number 0 is not a new"),
    ({"__list__": [{"__tensor__": 0, "memo": -1}]}, (), "memo number -1 is not a new"),
    ({"__list__": [{"__tensor__": 0, "parameter": 1}]}, (), "parameter is 1, not a bool"),
    ({"__list__": [TENSOR, state_of(extra=1)]}, (Counted,), "unexpected keys"),
    ({"__list__": [TENSOR, {"__set__": [{"__dict__": []}]}]}, (), "__set__ holds an item that is not hashable"),
])
def test_malformed_object_records_are_refused(tree, allowed, message):
    calls = Counted.calls
    with pytest.raises(CheckpointError, match=message):
        hostile(tree, allowed)
    assert Counted.calls == calls


def test_objects_nested_too_deeply_are_refused():
    tree = TENSOR
    for _ in range(60):
        tree = state_of(state={"__dict__": [["x", tree]]})
    with pytest.raises(CheckpointError, match="nested more than 100 containers deep"):
        hostile(tree, (Counted,))


def test_nothing_is_imported_for_a_refused_or_unknown_module():
    name = "cupynet_never_imported_module"
    with pytest.raises(WeightsOnlyError, match=f"GLOBAL {name}.Evil"):
        hostile({"__list__": [TENSOR, state_of("Evil", name)]})
    assert name not in sys.modules
    with pytest.raises(CheckpointError, match=f"cannot import module '{name}'"):
        hostile({"__list__": [TENSOR, state_of("Evil", name)]}, weights_only=False)
    with pytest.raises(CheckpointError, match="module os has no nothing_here"):
        hostile({"__list__": [TENSOR, {"__global__": ["os", "nothing_here"]}]}, weights_only=False)


# ---- across processes: a class of the script itself (__main__), under `cupynet run` --------------------------
SCRIPT = textwrap.dedent("""
    import sys
    import torch
    import torch.nn as nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 2)
            self.act = torch.nn.functional.relu

        def forward(self, x):
            return self.act(self.lin(x))

    path, mode = sys.argv[1], sys.argv[2]
    x = torch.arange(6.0).reshape(2, 3)
    if mode == "save":
        torch.manual_seed(0)
        net = Net()
        with open(path, "wb") as f:
            torch.save(net, f)
        print(net(x).tolist())
    else:
        try:
            torch.load(path)
        except Exception as error:
            print("refused:", "GLOBAL __main__.Net" in str(error))
        with torch.serialization.safe_globals([Net, torch.nn.modules.linear.Linear, torch.nn.functional.relu]):
            net = torch.load(path)
        print(net(x).tolist())
""")


def test_a_class_of_the_script_loads_in_another_process(tmp_path):
    script = tmp_path / "net.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": ROOT, "CUPYNET_DEVICE": "cpu"}

    def run(mode):
        done = subprocess.run([PYTHON, "-m", "cupynet.run", str(script), str(tmp_path / "net.pt"), mode],
                              capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()

    saved = run("save")
    assert run("load") == ["refused: True", *saved]


def test_get_unsafe_globals_in_checkpoint_lists_what_load_would_refuse(tmp_path):
    path = tmp_path / "m.pt"
    save(cn.nn.TransformerEncoderLayer(8, 2, 16), path)
    names = serialization.get_unsafe_globals_in_checkpoint(path)
    assert names == sorted(["cupynet.nn.transformer.TransformerEncoderLayer", "cupynet.nn.attention.MultiheadAttention",
                            "cupynet.nn.attention.NonDynamicallyQuantizableLinear", "cupynet.nn.linear.Linear",
                            "cupynet.nn.dropout.Dropout", "cupynet.nn.normalization.LayerNorm",
                            "cupynet.ops.activation.relu"])
    with safe_globals([cn.nn.Linear, F.relu]):
        with open(path, "rb") as f:
            assert serialization.get_unsafe_globals_in_checkpoint(f) == [n for n in names if n not in (
                "cupynet.nn.linear.Linear", "cupynet.ops.activation.relu")]
            assert f.tell() == 0
    assert serialization.get_unsafe_globals_in_checkpoint(tmp_path / "m.pt") == names
    save({"w": cn.ones(2)}, path)
    assert serialization.get_unsafe_globals_in_checkpoint(path) == []


def chain_of(count):
    chain = Counted()
    for _ in range(count - 1):
        outer = Counted()
        outer.inner, chain = chain, outer
    return chain


def test_save_refuses_objects_nested_deeper_than_load_reads(tmp_path):
    # NOTE: each object adds two levels (the object, its state dict): 50 objects reach depth 100 and load
    with safe_globals([Counted]):
        loaded = round_trip(chain_of(50))
    assert loaded.inner.inner.value == 1
    with pytest.raises(ValueError, match="nested more than 100 containers deep"):
        save(chain_of(52), tmp_path / "c.ckpt")
    assert not list(tmp_path.iterdir())
