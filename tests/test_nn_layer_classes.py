"""Every public layer of ``cupynet.nn`` is a ``class <Name>`` statement that grep finds, in a file named after it."""

import ast
import inspect
import sys

import pytest

import cupynet.nn
from cupynet.compat.nn_modules import TORCH_NN_MODULES


def _is_layer(value):
    return inspect.isclass(value) and issubclass(value, cupynet.nn.Module)


LAYERS = sorted(name for name in cupynet.nn.__all__ if _is_layer(getattr(cupynet.nn, name)))

# NOTE: where cupynet's file differs from torch's submodule: MultiheadAttention has its own file
# (torch puts it in activation.py), and the containers' file is named in the plural
OWN_FILE = {"MultiheadAttention": "attention", "NonDynamicallyQuantizableLinear": "attention",
            "ModuleDict": "containers", "ModuleList": "containers", "ParameterDict": "containers",
            "ParameterList": "containers", "Sequential": "containers"}


def _top_level_classes(path):
    with open(path) as f:
        return {node.name for node in ast.parse(f.read()).body if isinstance(node, ast.ClassDef)}


def test_there_are_layers_to_check():
    assert len(LAYERS) > 100 and "ReLU" in LAYERS and "CrossEntropyLoss" in LAYERS


@pytest.mark.parametrize("name", LAYERS)
def test_each_layer_is_a_class_statement_of_its_module(name):
    cls = getattr(cupynet.nn, name)
    assert cls.__name__ == name and "<locals>" not in cls.__qualname__ and cls.__qualname__ == name
    assert cls.__module__.startswith("cupynet.nn.")
    assert name in _top_level_classes(sys.modules[cls.__module__].__file__), \
        f"no `class {name}` statement in {cls.__module__} (made by a factory?)"


@pytest.mark.parametrize("torch_name", sorted(TORCH_NN_MODULES))
def test_each_layer_lives_in_the_file_torch_names(torch_name):
    for classes in TORCH_NN_MODULES[torch_name].values():
        for name in classes:
            assert getattr(cupynet.nn.modules, torch_name).__dict__[name].__module__ == \
                f"cupynet.nn.{OWN_FILE.get(name, torch_name)}"
