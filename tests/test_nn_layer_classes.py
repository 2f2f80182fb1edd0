"""Every public layer of ``cupynet.nn`` is a ``class <Name>`` statement that grep finds."""

import ast
import inspect
import sys

import pytest

import cupynet.nn


def _is_layer(value):
    return inspect.isclass(value) and issubclass(value, cupynet.nn.Module)


LAYERS = sorted(name for name in cupynet.nn.__all__ if _is_layer(getattr(cupynet.nn, name)))


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
