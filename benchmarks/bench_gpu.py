"""cupynet vs PyTorch eager training steps on one device, fp32 and AMP: the issue-7 benchmark.

Run (GPU):  PYTHONPATH=. python benchmarks/bench_gpu.py [--repeats 50] [--out benchmarks/results]
Run (CI):   PYTHONPATH=. python benchmarks/bench_gpu.py --device cpu --tiny --out /tmp/x
Run (emulated CUDA device, on the CPU):
            CUPYNET_DEVICE=cuda-emulated PYTHONPATH=. python benchmarks/bench_gpu.py --emulated --tiny --out /tmp/x

Models (from ``cupynet.models.build_model``, the PyTorch twin gets the same weights): the MLP
(4 x 4096 hidden, batch 4096), the CNN (3x32x32, batch 256) and the tiny transformer (seq 256,
d 512, 4 layers, batch 32); ``--tiny`` shrinks them so the whole run takes seconds on a CPU.
Each step is zero_grad, forward, cross-entropy, backward, Adam step; AMP adds autocast
(float16 on CUDA, bfloat16 on the CPU) and a GradScaler. Measured per case: median step time over
``--repeats`` synchronised steps after warm-up, samples/s, peak device memory (CuPy: a memory hook
tracking bytes handed out by the pool; PyTorch: ``torch.cuda.max_memory_allocated``), and host
syncs per step (cupynet: calls of every host-read entry point, see ``SyncCounter``). Prints a
markdown table and writes ``bench_gpu_<device>.json`` with the environment into ``--out``.
``--emulated`` runs cupynet's CUDA path on the emulated device and PyTorch on the CPU, measures no
peak memory and labels the table and ``bench_gpu_emulated*.json`` as not GPU figures: it checks the
benchmark's plumbing, nothing else.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import environment, median_time  # noqa: E402

import cupynet as cn  # noqa: E402

FULL = {  # model: (input shape, batch, build_model kwargs)
    "mlp": ((1024,), 4096, {"hidden": (4096,) * 4}),
    "cnn": ((3, 32, 32), 256, {}),
    "transformer": ((256 * 16,), 32, {"d_model": 512, "nhead": 8, "num_layers": 4, "dim_feedforward": 2048,
                                      "dropout": 0.0, "token_size": 16}),
}
TINY = {
    "mlp": ((32,), 16, {"hidden": (32,) * 4}),
    "cnn": ((3, 8, 8), 4, {"channels": (4, 8), "hidden": 16}),
    "transformer": ((8 * 4,), 4, {"d_model": 16, "nhead": 2, "num_layers": 2, "dim_feedforward": 32,
                                  "dropout": 0.0, "token_size": 4}),
}
TARGETS = {  # issue 7, as ratios against PyTorch measured in the same run
    "mlp amp step time / torch": 1.1, "cnn amp step time / torch": 1.3, "transformer amp step time / torch": 1.3,
    "peak memory amp / torch (max over models)": 1.1, "host syncs per amp step (max over models)": 0.0,
}
NUM_CLASSES = 10


class SyncCounter:
    """Counts host reads of device values made through cupynet: Tensor.item/numpy/tolist/bool/float/int,
    ``backend.to_numpy`` and ``cupy.asnumpy`` (CuPy's ndarray is a C type: its own ``.get`` cannot be
    wrapped, which is why cupynet routes host reads through these functions).

    Args:
        None.
    """

    METHODS = ("item", "numpy", "tolist", "__bool__", "__float__", "__int__")

    def __init__(self):
        self.count, self._depth, self._saved = 0, 0, []

    def _wrap(self, owner, name):
        original = getattr(owner, name)

        def counted(*args, **kwargs):
            # NOTE: only the outermost call counts: Tensor.item reaching to_numpy is one host read
            self.count += self._depth == 0
            self._depth += 1
            try:
                return original(*args, **kwargs)
            finally:
                self._depth -= 1
        self._saved.append((owner, name, original))
        setattr(owner, name, counted)

    def __enter__(self):
        for name in self.METHODS:
            self._wrap(cn.Tensor, name)
        self._wrap(cn.backend, "to_numpy")
        cupy = cn.backend.cupy_or_none()
        if cupy is not None and hasattr(cupy, "asnumpy"):
            self._wrap(cupy, "asnumpy")
        return self

    def __exit__(self, *exc):
        for owner, name, original in reversed(self._saved):
            setattr(owner, name, original)
        self._saved.clear()
        return False


def cupy_peak_bytes(step, steps=3):
    """Peak bytes held by live CuPy arrays while running ``step`` (a pool hook: malloc adds, free subtracts).

    Args:
        step: the training step.
        steps: how many steps to watch.
    """
    import cupy  # noqa: PLC0415

    class PeakHook(cupy.cuda.MemoryHook):
        name = "PeakHook"

        def __init__(self):
            self.live, self.peak = 0, 0

        def malloc_postprocess(self, **kw):
            self.live += kw["mem_size"]
            self.peak = max(self.peak, self.live)

        def free_postprocess(self, **kw):
            self.live -= kw["mem_size"]

    cupy.cuda.Device().synchronize()
    baseline = cupy.get_default_memory_pool().used_bytes()
    hook = PeakHook()
    with hook:
        for _ in range(steps):
            step()
        cupy.cuda.Device().synchronize()
    return baseline + hook.peak


def make_data(shape, batch, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((batch, *shape)).astype(np.float32), rng.integers(0, NUM_CLASSES, batch)


def cupynet_step(name, spec, device, amp):
    from cupynet import nn, optim  # noqa: PLC0415
    from cupynet.models import build_model  # noqa: PLC0415
    shape, batch, kw = spec
    cn.manual_seed(0)
    model = build_model(name, shape, NUM_CLASSES, **kw).to(device)
    opt = optim.Adam(model.parameters(), lr=1e-4)
    xs, ys = make_data(shape, batch)
    x, y = cn.tensor(xs, device=device), cn.tensor(ys, device=device)
    scaler = cn.amp.GradScaler(device.type, enabled=amp)
    amp_dtype = cn.float16 if device.type == "cuda" else cn.bfloat16

    def step():
        opt.zero_grad()
        with cn.amp.autocast(device.type, dtype=amp_dtype, enabled=amp):
            loss = nn.functional.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    return step


def torch_step(name, spec, device_type, amp, torch):
    from _torch_twin import twin  # noqa: PLC0415
    from _torch_twin_transformer import transformer_twin  # noqa: PLC0415

    from cupynet.models import build_model  # noqa: PLC0415
    shape, batch, kw = spec
    cn.manual_seed(0)
    ours = build_model(name, shape, NUM_CLASSES, **kw)
    model = (transformer_twin(ours, torch) if name == "transformer" else twin(ours, torch)).to(device_type)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    xs, ys = make_data(shape, batch)
    x, y = torch.tensor(xs, device=device_type), torch.tensor(ys, device=device_type)
    scaler = torch.amp.GradScaler(device_type, enabled=amp and device_type == "cuda")
    amp_dtype = torch.float16 if device_type == "cuda" else torch.bfloat16

    def step():
        opt.zero_grad()
        with torch.autocast(device_type, dtype=amp_dtype, enabled=amp):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    return step


def measure_cupynet(name, spec, device, amp, repeats, warmup, emulated=False):
    step = cupynet_step(name, spec, device, amp)
    seconds = median_time(step, repeats=repeats, warmup=warmup, device_type=device.type)
    with SyncCounter() as counter:
        for _ in range(3):
            step()
    peak = cupy_peak_bytes(step) if device.type == "cuda" and not emulated else None
    return {"step_ms": seconds * 1e3, "samples_per_s": spec[1] / seconds, "peak_mem_bytes": peak,
            "host_syncs_per_step": counter.count / 3}


def measure_torch(name, spec, device, amp, repeats, warmup, torch, emulated=False):
    cuda = device.type == "cuda" and not emulated  # NOTE: next to the emulated device, PyTorch runs on the CPU
    step = torch_step(name, spec, "cuda" if cuda else "cpu", amp, torch)
    seconds = median_time(step, repeats=repeats, warmup=warmup, torch_sync=cuda)
    peak = None
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        for _ in range(3):
            step()
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated()
    return {"step_ms": seconds * 1e3, "samples_per_s": spec[1] / seconds, "peak_mem_bytes": peak}


def device_environment(device, torch, emulated=False):
    env = environment()
    env.update({"device": device.type, "device_name": None, "driver": None, "cupy": None, "emulated": emulated})
    if emulated:
        env.update({"device_name": "emulated CUDA device (on the CPU; not a GPU figure)", "torch_device": "cpu"})
        return env
    cupy = cn.backend.cupy_or_none()
    if cupy is not None:
        env["cupy"] = cupy.__version__
    if device.type == "cuda":
        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        env["device_name"] = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        env["driver"] = cupy.cuda.runtime.driverGetVersion()
        env["cuda_runtime"] = cupy.cuda.runtime.runtimeGetVersion()
    if torch is not None and device.type == "cuda":
        env["torch_cuda"] = torch.version.cuda
    env["fused_kernels"] = os.environ.get("CUPYNET_FUSED_KERNELS", "1") != "0"
    return env


def ratio(a, b):
    return a / b if a is not None and b else None


def check_targets(results):
    """Each issue-7 target: measured value, limit, met (None where not measured).

    Args:
        results: the result rows.
    """
    row = {(r["model"], r["precision"]): r for r in results}
    values = {f"{m} amp step time / torch": row[(m, "amp")]["ratio_step_time"] for m in FULL}
    mems = [r["ratio_peak_mem"] for r in results if r["precision"] == "amp"]
    values["peak memory amp / torch (max over models)"] = max(mems) if all(v is not None for v in mems) else None
    values["host syncs per amp step (max over models)"] = max(r["cupynet"]["host_syncs_per_step"]
                                                              for r in results if r["precision"] == "amp")
    ours_speedup = ratio(row[("mlp", "fp32")]["cupynet"]["step_ms"], row[("mlp", "amp")]["cupynet"]["step_ms"])
    theirs_speedup = ratio(row[("mlp", "fp32")]["torch"]["step_ms"], row[("mlp", "amp")]["torch"]["step_ms"])
    out = {k: {"value": v, "limit": TARGETS[k], "met": None if v is None else v <= TARGETS[k]}
           for k, v in values.items()}
    relative = ratio(ours_speedup, theirs_speedup)
    out["mlp amp speed-up / torch's amp speed-up"] = {"value": relative, "limit": 0.9,
                                                      "met": None if relative is None else relative >= 0.9}
    return out


def markdown(results, targets, emulated=False):
    lines = ["EMULATED CUDA device on the CPU, PyTorch on the CPU: NOT GPU figures", ""] if emulated else []
    lines += ["| model | precision | cupynet ms | torch ms | ratio | cupynet samples/s | torch samples/s | "
             "cupynet peak MiB | torch peak MiB | mem ratio | syncs/step |", "|" + "---|" * 11]
    mib = lambda b: "n/a" if b is None else f"{b / 2**20:.1f}"  # noqa: E731
    num = lambda v, f: "n/a" if v is None else format(v, f)  # noqa: E731
    for r in results:
        o, t = r["cupynet"], r["torch"]
        lines.append(f"| {r['model']} | {r['precision']} | {o['step_ms']:.2f} | {t['step_ms']:.2f} | "
                     f"{num(r['ratio_step_time'], '.2f')} | {o['samples_per_s']:.0f} | {t['samples_per_s']:.0f} | "
                     f"{mib(o['peak_mem_bytes'])} | {mib(t['peak_mem_bytes'])} | {num(r['ratio_peak_mem'], '.2f')} | "
                     f"{o['host_syncs_per_step']:g} |")
    lines += ["", "| target | value | limit | met |", "|---|---|---|---|"]
    lines += [f"| {k} | {num(v['value'], '.3g')} | {v['limit']} | {v['met']} |" for k, v in targets.items()]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None, help="cuda or cpu (default: cupynet's default device)")
    parser.add_argument("--tiny", action="store_true", help="tiny models and batches (CI smoke run)")
    parser.add_argument("--repeats", type=int, default=None, help="timed steps per case (default 50, tiny 3)")
    parser.add_argument("--warmup", type=int, default=None, help="untimed steps first (default 5, tiny 1)")
    parser.add_argument("--out", default=str(pathlib.Path(__file__).parent / "results"))
    parser.add_argument("--emulated", action="store_true",
                        help="cupynet on the emulated CUDA device (CUPYNET_DEVICE=cuda-emulated), PyTorch on the CPU, "
                             "no peak memory; labelled: not GPU figures")
    args = parser.parse_args(argv)
    device = cn.device(args.device) if args.device else cn.default_device()
    repeats = args.repeats or (3 if args.tiny else 50)
    warmup = args.warmup or (1 if args.tiny else 5)
    if repeats < 1 or warmup < 0:
        parser.error(f"--repeats must be >= 1 and --warmup >= 0, got {repeats} and {warmup}")
    import torch  # noqa: PLC0415 - the oracle of this benchmark; required
    specs = TINY if args.tiny else FULL
    results, started = [], time.perf_counter()
    for name, spec in specs.items():
        for precision in ("fp32", "amp"):
            amp = precision == "amp"
            ours = measure_cupynet(name, spec, device, amp, repeats, warmup, args.emulated)
            theirs = measure_torch(name, spec, device, amp, repeats, warmup, torch, args.emulated)
            results.append({"model": name, "precision": precision, "batch": spec[1], "input_shape": list(spec[0]),
                            "cupynet": ours, "torch": theirs,
                            "ratio_step_time": ratio(ours["step_ms"], theirs["step_ms"]),
                            "ratio_peak_mem": ratio(ours["peak_mem_bytes"], theirs["peak_mem_bytes"])})
            print(f"# {name} {precision}: cupynet {ours['step_ms']:.2f} ms, torch {theirs['step_ms']:.2f} ms",
                  file=sys.stderr, flush=True)
    targets = check_targets(results)
    report = {"benchmark": "bench_gpu", "tiny": args.tiny, "emulated": args.emulated, "repeats": repeats,
              "warmup": warmup, "environment": device_environment(device, torch, args.emulated), "results": results,
              "targets": targets,
              "wall_s": time.perf_counter() - started}
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"bench_gpu_{'emulated' if args.emulated else device.type}{'_tiny' if args.tiny else ''}.json"
    path.write_text(json.dumps(report, indent=2))
    print(markdown(results, targets, args.emulated))
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
