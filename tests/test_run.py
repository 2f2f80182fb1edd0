"""`cupynet run`: torch module names map to cupynet's, missing names end the run with one line, the script
runs as python would run it (argv, __main__, its own traceback), and the process is left as it was."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

import cupynet
from cupynet import run
from cupynet.cli import main as cli_main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def script(tmp_path, body, name="train.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return str(path)


def run_here(capsys, path, *args):
    rc = run.run_script(path, list(args))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_torch_names_are_cupynet_objects(tmp_path, capsys):
    path = script(tmp_path, """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        from torch.utils.data import DataLoader, TensorDataset
        from torch.optim.lr_scheduler import StepLR
        import cupynet
        assert torch.tensor is cupynet.tensor and nn.Linear is cupynet.nn.Linear
        assert F.relu is cupynet.nn.functional.relu and DataLoader is cupynet.data.DataLoader
        assert TensorDataset is cupynet.data.TensorDataset and StepLR is cupynet.optim.lr_scheduler.StepLR
        assert torch.cuda.amp.autocast is cupynet.cuda.amp.autocast and torch.amp.GradScaler is cupynet.amp.GradScaler
        assert nn is torch.nn and torch.nn.functional is F
        print(torch.__name__, nn.__name__, torch.cuda.is_available())
    """)
    rc, out, err = run_here(capsys, path)
    assert rc == 0, err
    assert out.split() == ["torch", "torch.nn", str(cupynet.cuda.is_available())]  # NOTE: True on a (emulated) GPU


def test_a_setting_written_through_torch_lands_in_cupynet(tmp_path, capsys):
    path = script(tmp_path, """
        import torch
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.matmul.allow_tf32 = True
    """)
    try:
        assert run_here(capsys, path)[0] == 0
        assert cupynet.backends.cudnn.benchmark is True
        assert cupynet.get_float32_matmul_precision() == "high"
    finally:
        cupynet.backends.cudnn.benchmark = False
        cupynet.set_float32_matmul_precision("highest")


def test_a_modules_dict_read_through_torch_names_cupynets_objects(tmp_path, capsys):
    # imagenet: `models.__dict__[args.arch]()` and its list of model names built from models.__dict__
    path = script(tmp_path, """
        import torch
        import torch.nn
        import torchvision.models as models
        import cupynet
        names = sorted(n for n in models.__dict__ if n.islower() and not n.startswith("__")
                       and callable(models.__dict__[n]))
        assert "resnet18" in names and models.__dict__["resnet18"] is cupynet.vision.models.resnet18
        assert vars(torch)["tensor"] is cupynet.tensor and vars(torch)["nn"] is torch.nn
        assert models.__dict__["__name__"] == "torchvision.models" and "__spec__" in vars(models)
        assert "resnet18" in dir(models) and "nn" in dir(torch)
        print(models.__spec__.name, type(models).__name__)
    """)
    rc, out, err = run_here(capsys, path)
    assert rc == 0, err
    assert out.split() == ["torchvision.models", "TorchAlias"]


@pytest.mark.parametrize("torch_name", sorted(run.TORCH_MODULES))
def test_every_name_of_the_table_imports_or_is_reported_missing(tmp_path, capsys, torch_name):
    path = script(tmp_path, f"import {torch_name}\nprint({torch_name}.__name__)\n")
    rc, out, err = run_here(capsys, path)
    if not run.has_module(run.TORCH_MODULES[torch_name]):
        assert rc == run.EXIT_MISSING and err.startswith(f"cupynet has no {torch_name} yet")
    else:
        assert rc == 0 and out.strip() == torch_name, err


@pytest.mark.parametrize("body, name, line", [
    ("import torch\nx = torch.not_a_torch_name(3)\n", "torch.not_a_torch_name", 2),
    ("import torch\n\nfrom torch.nn import NotALayer\n", "torch.nn.NotALayer", 3),
    ("import torch.fx\n", "torch.fx", 1),
    ("import torch\nimport torch.nn.functional as F\nF.not_a_function\n", "torch.nn.functional.not_a_function", 3),
    ("import torch\nt = torch.zeros(2)\nt.not_a_tensor_method()\n", "torch.Tensor.not_a_tensor_method", 3),
])
def test_a_missing_name_is_one_line_and_exit_status_3(tmp_path, capsys, body, name, line):
    path = script(tmp_path, body)
    rc, out, err = run_here(capsys, path)
    assert rc == run.EXIT_MISSING == 3
    assert err == f"cupynet has no {name} yet ({path}:{line})\n"


def test_an_empty_module_imports_and_its_first_name_is_reported_missing(tmp_path, capsys):
    path = script(tmp_path, """
        import torch
        import torch.onnx
        print(torch.onnx.__name__, hasattr(torch.onnx, "export"))
        torch.onnx.export(None, None, "m.onnx")
    """)
    rc, out, err = run_here(capsys, path)
    assert out.split() == ["torch.onnx", "False"]
    assert rc == run.EXIT_MISSING and err == f"cupynet has no torch.onnx.export yet ({path}:5)\n"


def test_missing_names_stay_an_attribute_error_and_an_import_error_for_user_code(tmp_path, capsys):
    path = script(tmp_path, """
        import torch
        print(hasattr(torch, "not_a_torch_name"), hasattr(torch, "tensor"), getattr(torch.nn, "Nope", None))
        try:
            import torch.fx
        except ImportError as error:
            print(type(error).__name__)
        try:
            from torch.nn import Nope
        except ImportError:
            print("no Nope")
    """)
    rc, out, err = run_here(capsys, path)
    assert rc == 0, err
    assert out.splitlines() == ["False True None", "TorchModuleMissing", "no Nope"]


def test_argv_and_main_are_what_python_gives(tmp_path, capsys):
    path = script(tmp_path, """
        import json, os, sys
        print(json.dumps({"argv": sys.argv, "name": __name__, "path0": sys.path[0]}))
    """)
    rc, out, err = run_here(capsys, path, "--lr", "0.1", "-v")
    assert rc == 0, err
    seen = json.loads(out)
    assert seen == {"argv": [path, "--lr", "0.1", "-v"], "name": "__main__", "path0": str(tmp_path)}


def test_a_script_that_raises_prints_its_own_traceback_and_exits_1(tmp_path, capsys):
    path = script(tmp_path, """
        import torch

        def step():
            raise ValueError("boom")

        step()
    """)
    rc, out, err = run_here(capsys, path)
    assert rc == 1
    assert err.startswith("Traceback (most recent call last):\n") and err.endswith("ValueError: boom\n")
    assert f'File "{path}", line 7, in <module>' in err and "in step" in err
    assert "runpy" not in err and "cupynet/run.py" not in err and "cupynet/compat/run.py" not in err


def test_a_missing_script_is_exit_status_2(tmp_path, capsys):
    rc, out, err = run_here(capsys, str(tmp_path / "nope.py"))
    assert rc == 2 and "can't open file" in err and "nope.py" in err


def test_the_process_is_left_as_it_was(tmp_path, capsys):
    torch = pytest.importorskip("torch")  # the real torch, imported before the run
    path = script(tmp_path, "import torch\nimport torch.nn\nraise RuntimeError('stop')\n")
    argv, meta_path, path_list = list(sys.argv), list(sys.meta_path), list(sys.path)
    assert run_here(capsys, path)[0] == 1
    assert sys.modules["torch"] is torch and sys.modules["torch.nn"] is torch.nn
    assert sys.argv == argv and sys.meta_path == meta_path and sys.path == path_list
    assert not hasattr(cupynet, "__path__") or cupynet.nn.__name__ == "cupynet.nn"


def test_import_cupynet_installs_no_hook():
    code = "import sys, cupynet; print(any(type(f).__name__ == 'TorchFinder' for f in sys.meta_path))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": ROOT}, timeout=120)
    assert out.stdout.strip() == "False", out.stderr


def test_a_small_training_script_runs_from_both_entry_points(tmp_path):
    path = script(tmp_path, """
        import sys
        import torch
        from torch import nn, optim
        from torch.utils.data import DataLoader, TensorDataset

        torch.manual_seed(0)
        x = torch.randn(64, 4)
        y = (x.sum(dim=1) > 0).long()
        model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
        opt = optim.SGD(model.parameters(), lr=0.5)
        losses = []
        for epoch in range(int(sys.argv[1])):
            for xb, yb in DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True):
                loss = nn.functional.cross_entropy(model(xb), yb)
                opt.zero_grad()
                loss.backward()
                opt.step()
            losses.append(loss.item())
        print(f"{losses[0]:.4f} {losses[-1]:.4f}")
        sys.exit(7 if losses[-1] < losses[0] else 0)
    """)
    env = {**os.environ, "PYTHONPATH": ROOT, "CUPYNET_DEVICE": "cpu"}
    for command in ([sys.executable, "-m", "cupynet.run", path, "5"],
                    [sys.executable, "-m", "cupynet.cli", "run", path, "5"]):
        out = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
        assert out.returncode == 7, out.stderr[-2000:]  # the script's own sys.exit status
        assert len(out.stdout.split()) == 2


def test_the_cli_hands_every_flag_after_the_script_to_it(tmp_path, capsys):
    path = script(tmp_path, "import sys\nprint(sys.argv[1:])\n")
    assert cli_main(["run", path, "--help", "--epochs", "2"]) == 0
    assert capsys.readouterr().out.strip() == "['--help', '--epochs', '2']"


def test_run_without_a_script_is_a_usage_error(capsys):
    assert run.main([]) == 2
    assert "usage: cupynet run" in capsys.readouterr().err
    assert run.main(["--help"]) == 0


@pytest.mark.parametrize("body, name, line", [
    ("import torch.nn as nn\n\nw = nn.Embedding.not_a_classmethod(None)\n", "torch.nn.Embedding.not_a_classmethod", 3),
    ("import torch\nm = torch.nn.Sequential(torch.nn.Linear(2, 2))\nm.not_a_module_method()\n",
     "torch.nn.Sequential.not_a_module_method", 3),
    ("import torch\nfrom torch import optim\np = [torch.nn.Parameter(torch.ones(1))]\n"
     "optim.SGD(p, lr=0.1).not_an_optimizer_hook(print)\n", "torch.optim.SGD.not_an_optimizer_hook", 4),
    ("import torch\nprint(torch.nn.utils.parametrize.not_a_function)\n", "torch.nn.utils.parametrize.not_a_function",
     2),
    ("import torch\nx = torch.float32.not_a_dtype_attribute\n", None, 2),
])
def test_a_missing_attribute_of_a_cupynet_object_reached_through_torch_is_one_line(tmp_path, capsys, body, name,
                                                                                   line):
    path = script(tmp_path, body)
    rc, out, err = run_here(capsys, path)
    if name is None:  # NOTE: a NumPy dtype is not cupynet's: its AttributeError is the script's traceback
        assert rc == 1 and err.startswith("Traceback") and "AttributeError" in err
        return
    assert rc == run.EXIT_MISSING == 3
    assert err == f"cupynet has no {name} yet ({path}:{line})\n"


def test_a_missing_attribute_of_the_scripts_own_subclass_stays_its_traceback(tmp_path, capsys):
    path = script(tmp_path, """
        import torch

        class Net(torch.nn.Module):
            def forward(self, x):
                return self.not_defined_layer(x)

        Net()(torch.ones(2))
    """)
    rc, out, err = run_here(capsys, path)
    assert rc == 1 and err.startswith("Traceback") and err.endswith(
        "AttributeError: 'Net' object has no attribute 'not_defined_layer'\n")


def test_a_read_in_the_scripts_hook_is_reported_and_one_in_cupynets_code_is_a_traceback(tmp_path, capsys):
    # NOTE: the hook is the script's code, though cupynet calls it: its failed read is a missing name
    path = script(tmp_path, """
        import torch
        m = torch.nn.Linear(2, 2)
        m.register_forward_hook(lambda module, args, out: torch.nn.Linear.missing_in_a_hook)
        m(torch.ones(2))
    """)
    rc, out, err = run_here(capsys, path)
    assert rc == run.EXIT_MISSING and err == f"cupynet has no torch.nn.Linear.missing_in_a_hook yet ({path}:4)\n"
    # NOTE: the same read compiled as a file of the cupynet package stands for a bug in cupynet: a traceback
    path = script(tmp_path, """
        import os
        import cupynet
        import torch
        inside = os.path.join(os.path.dirname(cupynet.__file__), "ops", "not_a_real_file.py")
        exec(compile("torch.nn.Linear.missing_inside", inside, "exec"), {"torch": torch})
    """)
    rc, out, err = run_here(capsys, path)
    assert rc == 1 and err.startswith("Traceback") and "missing_inside" in err


def test_the_runner_reports_a_missing_class_attribute_from_a_subprocess(tmp_path):
    path = script(tmp_path, """
        import torch
        from torch import nn
        print("before")
        layer = nn.Linear.not_yet_in_cupynet(3, 4)
    """)
    env = {**os.environ, "PYTHONPATH": ROOT, "CUPYNET_DEVICE": "cpu"}
    out = subprocess.run([sys.executable, "-m", "cupynet.run", path], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 3 and out.stdout == "before\n"
    assert out.stderr == f"cupynet has no torch.nn.Linear.not_yet_in_cupynet yet ({path}:5)\n"
