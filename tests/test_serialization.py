"""cupynet.save / load and safetensors: round trips, atomicity under SIGKILL, hostile and damaged files."""

import json
import os
import pickle
import signal
import subprocess
import sys
import time
import zipfile

import numpy as np
import pytest

import cupynet as cn
from cupynet.safetensors_io import load_safetensors, save_safetensors
from cupynet.serialization import CheckpointError, load, save

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def sample():
    cn.manual_seed(0)
    return {"model": {"0.weight": cn.randn(4, 3), "0.bias": cn.randn(4).half(), "bn.num_batches_tracked": cn.tensor(5)},
            "optimizer": {"state": {0: {"step": cn.tensor(3.0), "exp_avg": cn.randn(4, 3)}},
                          "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "params": [0, 1]}]},
            "scaler": {"scale": 65536.0, "_growth_tracker": 7}, "bf16": cn.randn(5).bfloat16(),
            "numbers": [1, 2.5, float("inf"), float("nan"), None, "text", True], "array": np.arange(6).reshape(2, 3)}


def bits(t):
    a = t.numpy() if isinstance(t, cn.Tensor) else t
    return a.view(np.uint8).tobytes()


def test_round_trip_is_exact(tmp_path):
    obj = sample()
    save(obj, tmp_path / "c.ckpt")
    got = load(tmp_path / "c.ckpt")
    assert bits(got["model"]["0.weight"]) == bits(obj["model"]["0.weight"])
    assert got["model"]["0.bias"].dtype == cn.float16 and bits(got["bf16"]) == bits(obj["bf16"])
    assert got["bf16"].dtype == cn.bfloat16
    assert list(got["optimizer"]["state"]) == [0]  # int keys survive
    assert got["optimizer"]["param_groups"][0]["betas"] == (0.9, 0.999)  # tuples survive
    assert got["numbers"][:3] == [1, 2.5, float("inf")] and np.isnan(got["numbers"][3])
    assert got["numbers"][4:] == [None, "text", True]
    assert got["model"]["bn.num_batches_tracked"].dtype == cn.int64
    np.testing.assert_array_equal(got["array"], obj["array"])


def test_unsupported_object_is_refused_and_old_file_kept(tmp_path):
    path = tmp_path / "c.ckpt"
    save({"a": 1}, path)
    with pytest.raises(TypeError, match=r"cannot save obj\['fn'\] of type function"):
        save({"fn": lambda: 0}, path)
    assert load(path) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["c.ckpt"]  # no temp file left behind


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load(tmp_path / "nope.ckpt")
    with pytest.raises(FileNotFoundError, match="directory .* does not exist"):
        save({}, tmp_path / "no" / "dir" / "c.ckpt")


def test_pickle_file_is_rejected_without_executing(tmp_path):
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    path = tmp_path / "evil.pt"
    path.write_bytes(pickle.dumps(Evil()))
    with pytest.raises(CheckpointError, match="looks like a Python pickle.*never unpickles"):
        load(path)
    assert not marker.exists()


def test_truncated_file(tmp_path):
    path = tmp_path / "c.ckpt"
    save(sample(), path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match=r"c\.ckpt is damaged"):
        load(path)


def test_flipped_byte_in_array_data(tmp_path):
    path = tmp_path / "c.ckpt"
    save({"w": cn.ones(1000)}, path)
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("arrays/0.bin")
    data[info.header_offset + 30 + len(info.filename) + 100] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="(damaged|checksum)"):
        load(path)


def rewrite_manifest(path, change):
    with zipfile.ZipFile(path) as zf:
        entries = {n: zf.read(n) for n in zf.namelist()}
    manifest = json.loads(entries["manifest.json"])
    change(manifest)
    entries["manifest.json"] = json.dumps(manifest).encode()
    with zipfile.ZipFile(path, "w") as zf:
        for name, raw in entries.items():
            zf.writestr(name, raw)


@pytest.mark.parametrize("change, message", [
    (lambda m: m.update(version=99), "format version 99 is not supported"),
    (lambda m: m["arrays"][0].update(file="../../etc/passwd"), "expected 'arrays/0.bin' inside the archive"),
    (lambda m: m["arrays"][0].update(shape=[10 ** 6, 10 ** 6]), "needs 4000000000000 bytes but the archive holds"),
    (lambda m: m["arrays"][0].update(shape=[-1]), "invalid shape"),
    (lambda m: m["arrays"][0].update(dtype="object"), "unsupported dtype 'object'"),
    (lambda m: m.update(tree={"__tensor__": 7}), "array 7, which does not exist"),
    (lambda m: m.update(tree={"__import__": "os"}), "unknown tree tag '__import__'"),
])
def test_hostile_manifest(tmp_path, change, message):
    path = tmp_path / "c.ckpt"
    save({"w": cn.ones(10)}, path)
    rewrite_manifest(path, change)
    with pytest.raises(CheckpointError, match=message) as info:
        load(path)
    assert "c.ckpt" in str(info.value)


def test_map_location_cpu(tmp_path):
    path = tmp_path / "c.ckpt"
    save({"w": cn.ones(3)}, path)
    rewrite_manifest(path, lambda m: m["arrays"][0].update(device="cuda:0"))  # as if saved on a GPU
    assert load(path, map_location="cpu")["w"].device == cn.device("cpu")
    if not cn.cuda.is_available():
        with pytest.raises(RuntimeError, match="saved on cuda:0.*map_location='cpu'"):
            load(path)


def test_sigkill_mid_save_keeps_previous_checkpoint(tmp_path):
    path = tmp_path / "c.ckpt"
    save({"generation": 1, "w": cn.ones(10)}, path)
    flag = tmp_path / "mid-save"
    script = (f"import cupynet as cn; cn.save({{'generation': 2, 'a': cn.ones(2 ** 20), 'b': cn.ones(10)}}, "
              f"{str(path)!r})")
    env = {**os.environ, "PYTHONPATH": ROOT, "CUPYNET_TEST_SAVE_STALL": str(flag), "CUPYNET_DEVICE": "cpu"}
    proc = subprocess.Popen([sys.executable, "-c", script], env=env)
    deadline = time.time() + 60
    while not flag.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert flag.exists(), "the save never reached the middle of its write"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert load(path)["generation"] == 1  # the previous checkpoint is intact
    leftovers = [p.name for p in tmp_path.iterdir() if p.name not in ("c.ckpt", "mid-save")]
    assert all(name.startswith(".c.ckpt.tmp-") for name in leftovers)  # only a marked temp file can remain


def test_safetensors_round_trip_and_interop(tmp_path):
    weights = {"w": cn.randn(3, 4), "h": cn.randn(2).bfloat16(), "i": cn.arange(5)}
    save_safetensors(weights, tmp_path / "m.safetensors", metadata={"framework": "cupynet"})
    got = load_safetensors(tmp_path / "m.safetensors")
    assert {k: bits(v) for k, v in got.items()} == {k: bits(v) for k, v in weights.items()}
    st = pytest.importorskip("safetensors.numpy")
    theirs = st.load_file(str(tmp_path / "m.safetensors"))
    np.testing.assert_array_equal(theirs["w"], weights["w"].numpy())
    st.save_file({"x": np.arange(4, dtype=np.float32)}, str(tmp_path / "t.safetensors"))
    assert load_safetensors(tmp_path / "t.safetensors")["x"].tolist() == [0, 1, 2, 3]


def test_safetensors_bf16_read_by_torch(tmp_path):
    torch = pytest.importorskip("torch")
    stt = pytest.importorskip("safetensors.torch")
    h = cn.randn(6).bfloat16()
    save_safetensors({"h": h}, tmp_path / "m.safetensors")
    theirs = stt.load_file(str(tmp_path / "m.safetensors"))["h"]
    assert theirs.dtype == torch.bfloat16
    np.testing.assert_array_equal(theirs.float().numpy(), h.float().numpy())


def test_safetensors_hostile_offsets(tmp_path):
    path = tmp_path / "bad.safetensors"
    header = json.dumps({"x": {"dtype": "F32", "shape": [1000000], "data_offsets": [0, 4000000]}}).encode()
    path.write_bytes(len(header).to_bytes(8, "little") + header + b"\0" * 16)
    with pytest.raises(CheckpointError, match="offsets .* do not match"):
        load_safetensors(path)
    path.write_bytes((10 ** 12).to_bytes(8, "little") + b"{}")
    with pytest.raises(CheckpointError, match="header length"):
        load_safetensors(path)


SHAPE_CASES = {"0-d float": lambda: cn.tensor(2.5), "0-d int": lambda: cn.tensor(7), "empty": lambda: cn.zeros(0, 3),
               "transposed": lambda: cn.arange(12).reshape(3, 4).T, "0-d array": lambda: np.array(1.5),
               "reversed": lambda: cn.tensor(np.arange(5.0)[::-1])}


@pytest.mark.parametrize("name", SHAPE_CASES)
def test_round_trip_keeps_shape_dtype_and_values(tmp_path, name):
    value = SHAPE_CASES[name]()
    save({"v": value}, tmp_path / "c.ckpt")
    save_safetensors({"v": value}, tmp_path / "c.safetensors")
    for got in (load(tmp_path / "c.ckpt")["v"], load_safetensors(tmp_path / "c.safetensors")["v"]):
        want = value.numpy() if isinstance(value, cn.Tensor) else value
        mine = got.numpy() if isinstance(got, cn.Tensor) else got
        assert (mine.shape, mine.dtype) == (want.shape, want.dtype)
        np.testing.assert_array_equal(mine, want)


def test_model_with_batchnorm_loads_its_own_checkpoint(tmp_path):
    model = cn.nn.Sequential(cn.nn.Linear(3, 4), cn.nn.BatchNorm1d(4))
    model(cn.randn(5, 3))  # counts a batch: num_batches_tracked is a 0-d int64 tensor
    save(model.state_dict(), tmp_path / "m.ckpt")
    fresh = cn.nn.Sequential(cn.nn.Linear(3, 4), cn.nn.BatchNorm1d(4))
    fresh.load_state_dict(load(tmp_path / "m.ckpt"))
    assert fresh[1].num_batches_tracked.shape == () and fresh[1].num_batches_tracked.item() == 1
    np.testing.assert_array_equal(fresh[1].running_mean.numpy(), model[1].running_mean.numpy())
