"""``cupynet.nn.modules`` (``cupynet/compat/nn_modules``): torch.nn.modules' submodule paths for cupynet's classes,
kept to one table."""

import importlib
import inspect
import os
import sys

import pytest

import cupynet.nn
from cupynet.compat.nn_modules import TORCH_NN_MODULES
from cupynet.run import TORCH_MODULES

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import gen_nn_modules  # noqa: E402


@pytest.mark.parametrize("name", sorted(TORCH_NN_MODULES))
def test_each_file_is_what_the_table_generates(name):
    path = os.path.join(ROOT, "cupynet", "compat", "nn_modules", f"{name}.py")
    with open(path) as f:
        assert f.read() == gen_nn_modules.render(name, TORCH_NN_MODULES[name]), \
            "regenerate: PYTHONPATH=. python scripts/gen_nn_modules.py"


@pytest.mark.parametrize("name", sorted(TORCH_NN_MODULES))
def test_each_name_is_cupynets_own_class(name):
    module = importlib.import_module(f"cupynet.compat.nn_modules.{name}")
    for source, classes in TORCH_NN_MODULES[name].items():
        real = importlib.import_module(f"cupynet.nn.{source}")
        for cls in classes:
            assert getattr(module, cls) is getattr(real, cls)
            assert getattr(cupynet.nn, cls, getattr(real, cls)) is getattr(real, cls)


@pytest.mark.parametrize("name", sorted(TORCH_NN_MODULES))
def test_torch_has_each_class_in_that_submodule_and_none_is_left_out(name):
    torch_module = pytest.importorskip(f"torch.nn.modules.{name}")
    ours = {cls for classes in TORCH_NN_MODULES[name].values() for cls in classes}
    assert all(inspect.isclass(getattr(torch_module, cls, None)) for cls in ours)
    # NOTE: every class torch exports there that cupynet.nn has is in the table (it does not drift behind)
    theirs = {cls for cls in getattr(torch_module, "__all__", ()) if hasattr(cupynet.nn, cls)}
    assert theirs <= ours


def test_the_runner_maps_every_submodule_of_the_table():
    mapped = {k.rsplit(".", 1)[1] for k in TORCH_MODULES if k.startswith("torch.nn.modules.")}
    assert mapped == set(TORCH_NN_MODULES)
    assert all(TORCH_MODULES[f"torch.nn.modules.{n}"] == f"cupynet.compat.nn_modules.{n}" for n in mapped)
    assert TORCH_MODULES["torch.serialization"] == "cupynet.serialization"


def test_submodules_are_attributes_as_torch_paths_read_them():
    assert cupynet.nn.modules.rnn.LSTM is cupynet.nn.LSTM and cupynet.nn.modules is cupynet.compat.nn_modules
    assert cupynet.nn.modules.sparse.Embedding is cupynet.nn.Embedding
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        cupynet.nn.modules.nothing  # noqa: B018


def test_flatten_parameters_is_a_no_op_that_keeps_outputs():
    cupynet.manual_seed(0)
    lstm = cupynet.nn.LSTM(3, 4, 2)
    x = cupynet.randn(5, 2, 3)
    before = lstm(x)[0].array.copy()
    params = [p.array for p in lstm.parameters()]
    assert lstm.flatten_parameters() is None
    assert all(a is p.array for a, p in zip(params, lstm.parameters(), strict=True))  # the same arrays
    assert (lstm(x)[0].array == before).all()
