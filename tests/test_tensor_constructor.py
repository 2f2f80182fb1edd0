"""PyTorch's legacy ``torch.Tensor(...)`` forms (issue 13: word_language_model's generate.py uses
``torch.Tensor([[word_idx]])``), checked against torch; and the wrap-as-is form every op uses."""

import numpy as np
import pytest

import cupynet as cn

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("args", [([1, 2],), ((1.5, 2),), ([[1, 2], [3, 4]],), ([],), ((),)])
def test_data_forms_give_float32_like_torch(args):
    ours, theirs = cn.Tensor(*args), torch.Tensor(*args)
    assert ours.dtype == cn.float32 and tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_nested_zero_dim_tensors_become_their_values():
    word = 7
    ours, theirs = cn.Tensor([[cn.tensor(word)]]), torch.Tensor([[torch.tensor(word)]])
    assert ours.dtype == cn.float32 and ours.numpy().tolist() == theirs.numpy().tolist() == [[7.0]]


@pytest.mark.parametrize("sizes", [(2, 3), (4,), (0, 5), (2, 1, 3)])
def test_size_forms_give_float32_of_that_shape(sizes):
    ours, theirs = cn.Tensor(*sizes), torch.Tensor(*sizes)
    assert ours.dtype == cn.float32 and tuple(ours.shape) == tuple(theirs.shape) == sizes
    assert not ours.numpy().any()  # NOTE: zeros where torch leaves memory uninitialised (docs/differences.md)


def test_no_arguments_is_an_empty_float32_vector():
    assert tuple(cn.Tensor().shape) == tuple(torch.Tensor().shape) == (0,)
    assert cn.Tensor().dtype == cn.float32


def test_a_tensor_argument_shares_its_array():
    t = cn.tensor([1, 2], dtype=cn.int64)
    alias = cn.Tensor(t)
    assert alias.array is t.array and alias.dtype == cn.int64  # NOTE: torch.Tensor(t) keeps t's dtype too


@pytest.mark.parametrize("array", [np.arange(3, dtype=np.int32), np.float16(2.0), np.zeros((2, 2), np.float64)])
def test_an_array_is_wrapped_as_is(array):
    t = cn.Tensor(array)
    assert t.array is array  # NOTE: the ops' constructor: no copy, the dtype kept (unlike torch.Tensor(ndarray))


@pytest.mark.parametrize("args,error,message", [
    (("ab",), TypeError, "invalid data type 'str'"),
    ((-1,), RuntimeError, "negative dimension"),
    ((2, -3), RuntimeError, "negative dimension"),
    ((2, "x"), TypeError, "expected sizes as ints or one sequence of data"),
    (([1, "a"],), TypeError, "invalid data type"),
    ((np.zeros(2), 3), TypeError, "sizes follow an int, not an array"),
    ((2.5,), TypeError, "data must be a sequence \\(got float\\)"),
])
def test_bad_forms_name_what_was_wrong(args, error, message):
    with pytest.raises(error, match=message):
        cn.Tensor(*args)


def test_a_tensor_followed_by_sizes_is_refused():
    with pytest.raises(TypeError, match="expected sizes as ints or one sequence of data"):
        cn.Tensor(cn.tensor([1.0]), 2)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "uint8", "int8", "int16", "int32",
                                   "int64", "bool"])
def test_type_names_match_torch(dtype):
    ours, theirs = cn.ones(2).to(getattr(cn, dtype)), torch.ones(2).to(getattr(torch, dtype))
    assert ours.type() == theirs.type()


@pytest.mark.parametrize("target,expected", [("torch.DoubleTensor", "float64"), ("torch.LongTensor", "int64"),
                                             ("torch.BFloat16Tensor", "bfloat16")])
def test_type_casts_by_name_legacy_type_or_dtype_like_torch(target, expected):
    x = cn.ones(2)
    assert x.type(target).dtype == getattr(cn, expected)
    assert x.type(getattr(cn, target.split(".")[1])).dtype == getattr(cn, expected)
    assert x.type(getattr(cn, expected)).dtype == getattr(cn, expected)
    assert str(torch.ones(2).type(target).dtype) == f"torch.{expected}"


@pytest.mark.parametrize("name", ["foo", "torch.FooTensor", "FloatTensor"])
def test_an_unknown_type_name_is_refused_as_torch_does(name):
    with pytest.raises(ValueError, match="invalid type"):
        cn.ones(2).type(name)
    with pytest.raises(ValueError, match="invalid type"):
        torch.ones(2).type(name)


def test_size_behaves_like_torch_size():
    ours, theirs = cn.ones(2, 3).size(), torch.ones(2, 3).size()
    assert isinstance(ours, cn.Size) and isinstance(ours, tuple) and ours == theirs == (2, 3)
    assert ours[1:] == theirs[1:] and isinstance(ours[1:], cn.Size) and isinstance(ours[0], int)
    assert ours + (4,) == theirs + (4,) and isinstance(ours + (4,), cn.Size)
    assert (1,) + ours == (1,) + theirs and isinstance((1,) + ours, cn.Size)
    assert ours.numel() == theirs.numel() == 6 and cn.Size().numel() == torch.Size().numel() == 1
    assert repr(ours) == "Size([2, 3])"  # NOTE: torch prints torch.Size([2, 3]) (docs/differences.md)


def test_a_size_given_to_the_legacy_constructor_is_a_shape_and_a_tuple_is_data():
    shape = cn.ones(2, 3).size()
    assert tuple(cn.Tensor(shape).shape) == tuple(torch.Tensor(torch.Size([2, 3])).shape) == (2, 3)
    assert cn.Tensor((2, 3)).numpy().tolist() == torch.Tensor((2, 3)).tolist() == [2.0, 3.0]


@pytest.mark.parametrize("bad", [[1.5], ["a"], [None]])
def test_size_refuses_what_is_not_an_int(bad):
    with pytest.raises(TypeError, match="expected a sequence of ints"):
        cn.Size(bad)
