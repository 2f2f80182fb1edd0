"""The meta device and load_state_dict(assign=True) (issue 13: pytorch/tutorials' module_load_state_dict_tips)."""

import numpy as np
import pytest

import cupynet as cn
from cupynet import nn

torch = pytest.importorskip("torch")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.bn = nn.BatchNorm1d(2)

    def forward(self, x):
        return self.bn(self.fc(x))


def test_modules_built_under_the_meta_device_have_shapes_and_no_values():
    with cn.device("meta"):
        net = Net()
        x = cn.empty(4, 3)
    assert net.fc.weight.device.type == "meta" and tuple(net.fc.weight.shape) == (2, 3)
    assert net.fc.weight.requires_grad and net.bn.running_mean.device.type == "meta"
    assert x.device.type == "meta" and repr(x) == "tensor(..., device='meta', size=(4, 3))"
    assert cn.zeros(2).device.type == "cpu"  # NOTE: the default device is back after the block
    with torch.device("meta"):
        theirs = torch.nn.Linear(3, 2)
    assert str(theirs.weight.device) == str(net.fc.weight.device) == "meta"


def test_assign_gives_a_meta_module_the_states_tensors_and_it_then_matches_the_copying_load():
    source = Net()
    state = source.state_dict()
    with cn.device("meta"):
        net = Net()
    net.load_state_dict(state, assign=True)
    assert net.fc.weight.device.type == "cpu" and isinstance(net.fc.weight, nn.Parameter)
    assert net.fc.weight.requires_grad and not net.bn.running_mean.requires_grad
    assert np.shares_memory(net.fc.weight.array, state["fc.weight"].array)  # NOTE: assigned, not copied
    x = cn.randn(4, 3)
    copied = Net()
    copied.load_state_dict(state)
    np.testing.assert_array_equal(net(x).detach().numpy(), copied(x).detach().numpy())
    net(x).sum().backward()
    assert net.fc.weight.grad is not None


def test_copying_into_a_meta_module_is_refused_and_changes_nothing():
    with cn.device("meta"):
        net = Net()
    before = net.fc.weight
    with pytest.raises(RuntimeError, match="on the meta device .* assign=True"):
        net.load_state_dict(Net().state_dict())
    assert net.fc.weight is before and net.fc.weight.device.type == "meta"


@pytest.mark.parametrize("use", [lambda t: t + 1, lambda t: t.numpy(), lambda t: t.sum(), lambda t: t.to("cpu")])
def test_values_of_a_meta_tensor_are_refused_clearly(use):
    with cn.device("meta"):
        t = cn.zeros(2, 3)
    with pytest.raises((NotImplementedError, AttributeError), match="meta device has a shape and a dtype but no"):
        use(t)


def test_device_blocks_nest_and_a_bad_device_name_is_refused():
    with cn.device("meta"):
        with cn.device("cpu"):
            assert cn.ones(1).device.type == "cpu"
        assert cn.ones(1).device.type == "meta"
    with pytest.raises(ValueError, match="expected 'cpu', 'cuda', 'cuda:N' or 'meta'"):
        cn.device("meta:0")


def test_assign_keeps_the_modules_requires_grad_for_tensor_and_parameter_values_as_torch():
    for state_of in (lambda m: m.state_dict(), lambda m: {"weight": m.weight, "bias": m.bias}):
        ours, theirs = nn.Linear(2, 2), torch.nn.Linear(2, 2)
        ours.weight.requires_grad_(False)
        theirs.weight.requires_grad_(False)
        ours.load_state_dict(state_of(nn.Linear(2, 2)), assign=True)
        theirs.load_state_dict(state_of(torch.nn.Linear(2, 2)), assign=True)
        assert ours.weight.requires_grad is theirs.weight.requires_grad is False
        assert ours.bias.requires_grad is theirs.bias.requires_grad is True
        assert isinstance(ours.weight, nn.Parameter)
