"""repr(tensor) lays out values as torch's does, under set_printoptions (issue 13)."""

import math

import numpy as np
import pytest

import cupynet as cn

torch = pytest.importorskip("torch")

CASES = [[1.5, 2.0], [1.0, 2.0], [1e-8, 1.0], [1e10, 1.0], [math.nan, 1.5], [0.0, 0.0], [1.0, 2000.0],
         [-1.25, 3.0], [[1.123456, 2.0], [3.0, 4.0]], list(range(2000)), [1e-5, 2e-5], [float(i) for i in range(100)],
         [[0.5] * 30] * 30, [[-0.5] * 30] * 3, [[[1, 2]] * 3] * 2, 3.25, [True, False], [-7, 12345]]
OPTIONS = [{}, {"precision": 2}, {"threshold": 5, "edgeitems": 1}, {"sci_mode": True}, {"sci_mode": False},
           {"linewidth": 20}, {"linewidth": 120}, {"profile": "short"}, {"profile": "full"}]


@pytest.fixture
def restore_print_options():
    yield
    cn.set_printoptions(profile="default")
    torch.set_printoptions(profile="default")


@pytest.mark.parametrize("options", OPTIONS, ids=str)
def test_repr_matches_torch_under_each_print_option(options, restore_print_options):
    cn.set_printoptions(**options)
    torch.set_printoptions(**options)
    for values in CASES:
        if options.get("sci_mode") is not None and values == [1e10, 1.0]:
            continue  # NOTE: NumPy keeps scientific notation from 1e8 on even when told otherwise (docs)
        assert repr(cn.tensor(values)) == repr(torch.tensor(values)), values


def test_dtype_device_and_grad_suffixes_and_bfloat16():
    assert repr(cn.tensor([1.5], dtype=cn.bfloat16)) == "tensor([1.5000], dtype=cupynet.bfloat16)"
    assert repr(cn.tensor([1.0, 2.0], requires_grad=True)) == "tensor([1., 2.], requires_grad=True)"
    assert repr(cn.tensor([1.0, 2.0], requires_grad=True) * 2) == "tensor([2., 4.], grad_fn=<MulBackward>)"


def test_print_options_leave_numpy_alone_and_every_call_sets_sci_mode(restore_print_options):
    before = np.get_printoptions()
    cn.set_printoptions(precision=1, sci_mode=True)
    assert np.get_printoptions() == before
    cn.set_printoptions(precision=3)  # NOTE: as torch: sci_mode not given means None again
    assert cn.settings.print_options() == {"precision": 3, "threshold": 1000, "edgeitems": 3, "linewidth": 80,
                                           "sci_mode": None}
    assert repr(cn.tensor([1.23456])) == "tensor([1.235])"


@pytest.mark.parametrize("kwargs, message", [
    ({"precision": -1}, "precision must be a non-negative integer"),
    ({"threshold": 2.5}, "threshold must be a non-negative integer"),
    ({"linewidth": "80"}, "linewidth must be a non-negative integer"),
    ({"profile": 3}, "profile must be a string"),
    ({"sci_mode": "yes"}, "sci_mode"),
])
def test_bad_print_options_are_refused_and_change_nothing(kwargs, message, restore_print_options):
    before = cn.settings.print_options()
    with pytest.raises((ValueError, TypeError), match=message):
        cn.set_printoptions(**kwargs)
    assert cn.settings.print_options() == before


def test_an_unknown_profile_changes_nothing_as_in_torch(restore_print_options):
    # NOTE: YOLOv5 calls set_printoptions(linewidth=320, precision=5, profile="long"); torch ignores the profile
    for lib in (cn, torch):
        lib.set_printoptions(precision=2, threshold=5, edgeitems=1)
        lib.set_printoptions(profile="long", linewidth=40)
    for values in CASES:
        assert repr(cn.tensor(values)) == repr(torch.tensor(values)), values
    assert cn.settings.print_options()["precision"] == 2 and cn.settings.print_options()["linewidth"] == 40
