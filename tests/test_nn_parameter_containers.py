"""ParameterList and ParameterDict: registration, state_dict keys as torch, optimizers see them (issue 13)."""

import numpy as np
import pytest

import cupynet as cn
from cupynet import nn
from tests.op_harness import requires_torch

try:
    import torch
except ImportError:
    torch = None


class _Mine(nn.Module):
    def __init__(self):
        super().__init__()
        self.plist = nn.ParameterList([nn.Parameter(cn.ones(2, 3)), cn.zeros(3)])
        self.pdict = nn.ParameterDict({"alpha": nn.Parameter(cn.ones(1)), "beta": cn.zeros(2, 2)})

    def forward(self, x):
        return (x @ self.plist[0] + self.plist[1]).sum() * self.pdict["alpha"] + self.pdict["beta"].sum()


@requires_torch
def test_state_dict_keys_match_torch_and_load_from_torch():
    class Theirs(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.plist = torch.nn.ParameterList([torch.nn.Parameter(torch.ones(2, 3)), torch.zeros(3)])
            self.pdict = torch.nn.ParameterDict({"alpha": torch.nn.Parameter(torch.ones(1)), "beta": torch.zeros(2, 2)})

    mine, theirs = _Mine(), Theirs()
    assert list(mine.state_dict()) == list(theirs.state_dict())
    state = {k: cn.tensor(v.numpy() + 1.5) for k, v in theirs.state_dict().items()}
    mine.load_state_dict(state)
    np.testing.assert_allclose(mine.plist[1].detach().numpy(), np.full(3, 1.5))
    assert repr(mine.plist) == repr(theirs.plist).replace("torch.", "")
    # NOTE: torch's ParameterDict prints legacy type names (FloatTensor); cupynet prints the dtype in both
    assert repr(mine.pdict).splitlines()[1] == "    (alpha): Parameter containing: [float32 of size 1]"


def test_tensors_become_parameters_and_train():
    model = _Mine()
    assert all(isinstance(p, nn.Parameter) for p in model.parameters())
    assert len(list(model.parameters())) == 4
    opt = cn.optim.SGD(model.parameters(), lr=0.1)
    model(cn.ones(1, 2)).backward()
    opt.step()
    assert not np.allclose(model.plist[0].detach().numpy(), 1.0)


def test_list_and_dict_operations():
    plist = nn.ParameterList()
    plist.append(cn.ones(2)).extend([cn.zeros(1)])
    plist += [cn.zeros(3)]
    assert len(plist) == 3 and plist[-1].shape == (3,) and len(plist[1:]) == 2
    plist[0] = cn.full((4,), 2.0)
    assert plist[0].shape == (4,)
    pdict = nn.ParameterDict([("a", cn.ones(1))])
    pdict.update({"b": cn.zeros(2)})
    assert list(pdict) == ["a", "b"] and "b" in pdict and pdict.get("z") is None
    assert pdict.pop("a").shape == (1,) and list(pdict.keys()) == ["b"]


def test_bad_inputs():
    with pytest.raises(TypeError, match="expected a Parameter or Tensor"):
        nn.ParameterList([1.0])
    with pytest.raises(IndexError, match="out of range"):
        nn.ParameterList([cn.ones(1)])[3]
    with pytest.raises(TypeError, match="keys must be strings"):
        nn.ParameterDict()[1] = cn.ones(1)
    with pytest.raises(KeyError, match="no key 'x'"):
        nn.ParameterDict()["x"]
    with pytest.raises(TypeError, match="iterable"):
        nn.ParameterList().extend(cn.ones(2))


@pytest.mark.parametrize("make", [lambda: nn.ModuleList([nn.ReLU()]), lambda: nn.ModuleDict({"a": nn.ReLU()}),
                                  lambda: nn.ParameterList([cn.ones(1)]), lambda: nn.ParameterDict({"a": cn.ones(1)})])
def test_containers_refuse_a_call_and_bad_updates_alike(make):
    container = make()
    name = type(container).__name__
    with pytest.raises(NotImplementedError, match=f"{name} is not callable: index it"):
        container(cn.ones(1))
    if hasattr(container, "update"):
        with pytest.raises(TypeError, match=rf"{name}\.update: expected \(name, \w+\) pairs"):
            container.update([("only-a-name",)])
        assert list(container) == ["a"]  # NOTE: nothing was added by the refused update
    else:
        with pytest.raises(TypeError, match=rf"{name}\.extend should be called with an iterable"):
            container.extend(42)
        assert len(container) == 1
