"""cupynet.Generator (torch.Generator) and the generator= keyword of the random ops (issue 13).

Values cannot match torch's (different bit generators, docs/differences.md); what must
hold is torch's *contract*: a generator seeded the same gives the same numbers, its stream
is independent of the global one, and get_state/set_state replay it exactly.
"""

import numpy as np
import pytest

import cupynet as cn
from cupynet import nn

torch = pytest.importorskip("torch")


def _values(t):
    return t.detach().numpy()


def test_manual_seed_returns_the_default_generator_as_torch():
    g = cn.manual_seed(5)
    assert g is cn.default_generator and isinstance(g, cn.Generator)
    assert isinstance(torch.manual_seed(5), torch.Generator)
    assert g.initial_seed() == 5 == cn.initial_seed()
    a = cn.randn(4)
    cn.manual_seed(5)
    np.testing.assert_array_equal(_values(a), _values(cn.randn(4)))


def test_new_generator_matches_torch_defaults():
    g, tg = cn.Generator(), torch.Generator()
    assert g.initial_seed() == tg.initial_seed()
    assert str(g.device) == str(tg.device) == "cpu"
    assert g.manual_seed(7) is g


@pytest.mark.parametrize("draw", [
    lambda g: cn.randn(3, 4, generator=g),
    lambda g: cn.rand((5,), generator=g, dtype=cn.float64),
    lambda g: cn.randint(0, 100, (6,), generator=g),
    lambda g: cn.randperm(10, generator=g),
    lambda g: cn.zeros(5).normal_(2.0, 3.0, generator=g),
    lambda g: cn.zeros(5).uniform_(-1.0, 1.0, generator=g),
    lambda g: nn.init.normal_(cn.empty(4), generator=g),
    lambda g: nn.init.kaiming_uniform_(cn.empty(3, 4), generator=g),
    lambda g: nn.init.trunc_normal_(cn.empty(8), generator=g),
], ids=["randn", "rand", "randint", "randperm", "normal_", "uniform_", "init.normal_", "kaiming_uniform_",
        "trunc_normal_"])
def test_same_seed_same_values_and_global_stream_untouched(draw):
    cn.manual_seed(0)
    first = _values(draw(cn.Generator().manual_seed(11)))
    after_global = _values(cn.rand(3))
    cn.manual_seed(0)
    second = _values(draw(cn.Generator().manual_seed(11)))
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(after_global, _values(cn.rand(3)))   # the global stream did not move
    assert not np.array_equal(_values(draw(cn.Generator().manual_seed(12))), first)


def test_get_state_set_state_replays_the_stream():
    g = cn.Generator().manual_seed(3)
    cn.randn(7, generator=g)
    state = g.get_state()
    assert state.dtype == cn.uint8 and state.ndim == 1
    expected = _values(cn.randn(5, generator=g))
    other = cn.Generator().set_state(state)
    assert other.initial_seed() == 3
    np.testing.assert_array_equal(_values(cn.randn(5, generator=other)), expected)
    # the state is a copy: drawing afterwards does not change it
    np.testing.assert_array_equal(_values(cn.randn(5, generator=g.set_state(state))), expected)


def test_seed_is_fresh_and_reported():
    g = cn.Generator()
    s = g.seed()
    assert g.initial_seed() == s and 0 <= s < 2**64
    assert cn.Generator().seed() != s


def test_bad_inputs_name_the_problem_and_leave_state():
    g = cn.Generator().manual_seed(1)
    state = g.get_state()
    with pytest.raises(ValueError, match="seed must be an integer in"):
        g.manual_seed(-1)
    with pytest.raises(ValueError, match="seed must be an integer in"):
        g.manual_seed(1.5)
    with pytest.raises(TypeError, match="ByteTensor"):
        g.set_state(cn.zeros(45))
    with pytest.raises(RuntimeError, match="expected a state of 5056 bytes .*, got 3"):
        g.set_state(cn.zeros(3, dtype=cn.uint8))
    assert g.initial_seed() == 1
    np.testing.assert_array_equal(_values(g.get_state()), _values(state))
    with pytest.raises(TypeError, match="generator must be a cupynet.Generator"):
        cn.randn(3, generator=3)
    t = cn.ones(3)
    with pytest.raises(TypeError, match="generator must be a cupynet.Generator"):
        nn.init.normal_(t, generator="x")
    np.testing.assert_array_equal(_values(t), np.ones(3))


def test_device_mismatch_is_torchs_error():
    with pytest.raises(RuntimeError, match="Expected a 'cpu' device type for generator but found 'cuda'"):
        cn.randn(3, generator=_FakeCuda())


class _FakeCuda(cn.Generator):
    """A generator that claims a GPU, to reach the device check without one."""

    def __init__(self):
        super().__init__("cpu")
        self.device = type("D", (), {"type": "cuda"})()


def test_global_rng_state_roundtrip_still_works():
    cn.manual_seed(4)
    state = cn.get_rng_state()
    a = _values(cn.rand(3))
    cn.set_rng_state(state)
    np.testing.assert_array_equal(_values(cn.rand(3)), a)
    assert cn.random.seed() != 4 and cn.initial_seed() != 4


def test_multinomial_and_samplers_draw_from_a_cupynet_generator():
    weights = cn.tensor([0.1, 0.2, 0.3, 0.4])
    first = cn.multinomial(weights, 3, generator=cn.Generator().manual_seed(5))
    again = cn.multinomial(weights, 3, generator=cn.Generator().manual_seed(5))
    assert first.tolist() == again.tolist()
    g = cn.Generator().manual_seed(7)
    orders = [list(cn.data.RandomSampler(range(10), generator=g)) for _ in range(2)]
    assert orders[0] != orders[1]  # NOTE: one stream, advanced by each draw, as torch's samplers do
    replay = cn.Generator().manual_seed(7)
    assert [list(cn.data.RandomSampler(range(10), generator=replay)) for _ in range(2)] == orders
    with pytest.raises(TypeError, match="multinomial: generator must be a cupynet.Generator"):
        cn.multinomial(weights, 1, generator="seed")
