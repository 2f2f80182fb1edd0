"""``import cupynet`` loads the core alone; every other name still resolves, on first use (cupynet/_lazy.py).

The optional packages (distributions, distributed, multiprocessing, vision, ...) and the compatibility
surface (cupynet/compat/: the runner, torch.nn.modules paths, legacy constructors, Variable,
torch.cuda.amp, the netcl and prototype AMP APIs) are names of the packages they always were, loaded
when a program first reads them. Each check runs in a fresh interpreter, so nothing another test
imported hides a name that would not load.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_MODULES = 120

# NOTE: none of these (nor their submodules) may load with `import cupynet`
NOT_AT_IMPORT = ("cupynet.distributions", "cupynet.distributed", "cupynet.multiprocessing", "cupynet.shared_memory",
                 "cupynet.backends", "cupynet.accelerator", "cupynet.vision", "cupynet.utils", "cupynet.compat",
                 "cupynet.run", "cupynet.meta", "cupynet.nn.modules", "cupynet.models", "cupynet.train",
                 "cupynet.cli", "cupynet.emulated_cuda")

# NOTE: the names that load on first use, read by attribute from a fresh `import cupynet`: each must be the
# object of the module that defines it (right side)
LAZY_NAMES = {
    "cupynet.distributions.Normal": "cupynet.distributions.normal.Normal",
    "cupynet.distributed.init_process_group": "cupynet.distributed.process_group.init_process_group",
    "cupynet.multiprocessing.spawn": "cupynet.multiprocessing.spawn.spawn",
    "cupynet.shared_memory.share_array": "cupynet.shared_memory.share_array",
    "cupynet.backends.cudnn.benchmark": None,
    "cupynet.accelerator.is_available": "cupynet.accelerator.is_available",
    "cupynet.vision.datasets.MNIST": "cupynet.vision.datasets.MNIST",
    "cupynet.utils.tensorboard.SummaryWriter": "cupynet.utils.tensorboard.SummaryWriter",
    "cupynet.utils.checkpoint.checkpoint": "cupynet.utils.checkpoint.checkpoint",
    "cupynet.utils.data.DataLoader": "cupynet.data.dataloader.DataLoader",
    "cupynet.data.DataLoader": "cupynet.data.dataloader.DataLoader",
    "cupynet.data.DistributedSampler": "cupynet.data.distributed.DistributedSampler",
    "cupynet.data.datasets.MNIST": "cupynet.data.datasets.mnist.MNIST",
    "cupynet.linalg.norm": "cupynet.linalg.norm",
    "cupynet.save": "cupynet.serialization.save",
    "cupynet.load": "cupynet.serialization.load",
    "cupynet.serialization.add_safe_globals": "cupynet.serialization.add_safe_globals",
    "cupynet.load_safetensors": "cupynet.safetensors_io.load_safetensors",
    "cupynet.save_safetensors": "cupynet.safetensors_io.save_safetensors",
    "cupynet.meta.MetaArray": "cupynet.meta.MetaArray",
    "cupynet.models.MLP": "cupynet.models.mlp.MLP",
    "cupynet.train": None,
    "cupynet.optim.lr_scheduler.StepLR": "cupynet.optim.lr_scheduler.StepLR",
    "cupynet.autograd.functional.jacobian": "cupynet.autograd.functional.jacobian",
    # the compatibility surface
    "cupynet.run.TORCH_MODULES": "cupynet.compat.run.TORCH_MODULES",
    "cupynet.run.main": "cupynet.compat.run.main",
    "cupynet.run.STAND_INS": "cupynet.compat.run.STAND_INS",
    "cupynet.nn.modules.rnn.LSTM": "cupynet.nn.rnn.LSTM",
    "cupynet.nn.modules.TORCH_NN_MODULES": "cupynet.compat.nn_modules.TORCH_NN_MODULES",
    "cupynet.autograd.Variable": "cupynet.compat.variable.Variable",
    "cupynet.cuda.amp.autocast": "cupynet.compat.cuda_amp.autocast",
    "cupynet.cuda.amp.GradScaler": "cupynet.compat.cuda_amp.GradScaler",
    "cupynet.cuda.amp.is_bf16_supported": "cupynet.cuda.capability.is_bf16_supported",
    "cupynet.amp.netcl.GradScaler": "cupynet.compat.netcl.GradScaler",
    "cupynet.amp.prototype.add_amp_attributes": "cupynet.compat.amp_prototype.add_amp_attributes",
    "cupynet.amp.add_amp_attributes": "cupynet.compat.amp_prototype.add_amp_attributes",
    "cupynet.amp.enable_autocasting": "cupynet.compat.amp_prototype.enable_autocasting",
    "cupynet.amp.scale_outputs": "cupynet.compat.amp_prototype.scale_outputs",
    "cupynet.amp.supports_bf16": "cupynet.cuda.capability.supports_bf16",
    "cupynet.cuda.is_bf16_supported": "cupynet.cuda.capability.is_bf16_supported",
    **{f"cupynet.{name}": f"cupynet.compat.legacy_tensors.{name}"
       for name in ("FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor",
                    "ShortTensor", "IntTensor", "LongTensor", "BoolTensor")},
}

# NOTE: the packages that give names on first use; every name of their __all__ and dir() must resolve
LAZY_PACKAGES = ("cupynet", "cupynet.amp", "cupynet.autograd", "cupynet.cuda", "cupynet.nn", "cupynet.optim",
                 "cupynet.data", "cupynet.utils")


def fresh(code: str):
    """Run ``code`` in a new interpreter (the repository on its path) and return what it printed, as JSON."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": ROOT}, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.splitlines()[-1])


def test_import_cupynet_loads_the_core_alone():
    loaded = fresh("""
        import json, sys
        import cupynet
        print(json.dumps(sorted(m for m in sys.modules if m.startswith("cupynet"))))
    """)
    assert loaded[0] == "cupynet" and cupynet_file_is_this_checkout()
    early = [m for m in loaded if any(m == p or m.startswith(p + ".") for p in NOT_AT_IMPORT)]
    assert early == [], f"loaded by `import cupynet`, but meant to load on first use: {early}"
    assert len(loaded) <= MAX_MODULES, f"`import cupynet` loads {len(loaded)} cupynet modules (at most " \
                                       f"{MAX_MODULES}): {loaded}"


def cupynet_file_is_this_checkout() -> bool:
    return fresh("import json, cupynet; print(json.dumps(cupynet.__file__))").startswith(ROOT)


def test_each_lazy_name_resolves_to_its_own_object():
    found = fresh(f"""
        import importlib, json
        import cupynet

        def read(dotted):
            obj = cupynet
            for part in dotted.split(".")[1:]:
                obj = getattr(obj, part)
            return obj

        def defined(dotted):
            module, _, name = dotted.rpartition(".")
            return getattr(importlib.import_module(module), name)

        out = {{}}
        for name, home in {LAZY_NAMES!r}.items():
            try:
                value = read(name)
                out[name] = "ok" if home is None or value is defined(home) else f"not {{home}}"
            except Exception as error:
                out[name] = repr(error)
        print(json.dumps(out))
    """)
    assert {name: result for name, result in found.items() if result != "ok"} == {}


def test_every_listed_name_of_a_lazy_package_resolves():
    found = fresh(f"""
        import importlib, json
        import cupynet

        out = {{}}
        for package in {LAZY_PACKAGES!r}:
            module = importlib.import_module(package)
            for name in sorted(set(getattr(module, "__all__", ())) | set(dir(module))):
                try:
                    getattr(module, name)
                except Exception as error:
                    out[f"{{package}}.{{name}}"] = repr(error)
        print(json.dumps(out))
    """)
    assert found == {}


def test_dir_lists_the_lazy_names_before_they_load():
    listed = fresh("""
        import json, sys
        import cupynet
        names = {"cupynet": dir(cupynet), "amp": dir(cupynet.amp), "autograd": dir(cupynet.autograd),
                 "nn": dir(cupynet.nn), "cuda": dir(cupynet.cuda)}
        print(json.dumps({"names": names, "loaded": sorted(m for m in sys.modules if m.startswith("cupynet"))}))
    """)
    names = listed["names"]
    assert {"distributions", "vision", "multiprocessing", "utils", "run", "FloatTensor"} <= set(names["cupynet"])
    assert {"netcl", "prototype", "add_amp_attributes", "supports_bf16"} <= set(names["amp"])
    assert "Variable" in names["autograd"] and "modules" in names["nn"] and "amp" in names["cuda"]
    assert not any(m.startswith(("cupynet.compat", "cupynet.distributions")) for m in listed["loaded"])


def test_a_name_nobody_provides_is_still_an_attribute_error():
    import cupynet
    for module in (cupynet, cupynet.amp, cupynet.autograd, cupynet.cuda, cupynet.nn):
        assert not hasattr(module, "nothing_here")
        with pytest.raises(AttributeError, match=f"module '{module.__name__}' has no attribute 'nothing_here'"):
            module.nothing_here  # noqa: B018


def test_a_lazy_name_is_the_same_object_on_every_read_and_through_import():
    import cupynet
    import cupynet.compat.legacy_tensors as legacy
    from cupynet.amp import netcl
    from cupynet.autograd import Variable
    assert cupynet.FloatTensor is legacy.FloatTensor is cupynet.FloatTensor
    assert netcl is cupynet.amp.netcl is cupynet.compat.netcl
    assert Variable is cupynet.autograd.Variable
    assert cupynet.run.TorchFinder is cupynet.compat.run.TorchFinder
