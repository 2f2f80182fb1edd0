"""PyTorch's legacy constructors (issue 13: pytorch/examples gcn and gat build parameters with
``torch.Tensor(in, out)`` and data with ``torch.FloatTensor(ndarray)`` / ``torch.LongTensor(ndarray)``):
``Tensor(*sizes)``, ``Tensor(data)``, ``Tensor(tensor)``, ``Tensor()`` and the typed ``FloatTensor`` & co.,
compared with torch's shapes, dtypes, values and isinstance answers; and the factories' ``size=`` keyword
(gat's ``torch.empty(size=(n, m))``)."""

import numpy
import pytest

import cupynet

torch = pytest.importorskip("torch")

TYPED = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor",
         "ShortTensor", "IntTensor", "LongTensor", "BoolTensor"]


def _dtype_name(torch_dtype):
    return str(torch_dtype).removeprefix("torch.")


def _same(ours, theirs, values=True):
    assert ours.shape == tuple(theirs.shape)
    assert str(ours.dtype) == _dtype_name(theirs.dtype)
    if values and theirs.dtype != torch.bfloat16:
        numpy.testing.assert_array_equal(ours.array.astype(numpy.float64), theirs.double().numpy())


@pytest.mark.parametrize("args", [(2, 3), (0,), (4,), ()])
def test_tensor_of_sizes_has_torch_shape_and_default_dtype(args):
    ours, theirs = cupynet.Tensor(*args), torch.Tensor(*args)
    assert ours.shape == tuple(theirs.shape) and str(ours.dtype) == _dtype_name(theirs.dtype)
    assert not ours.requires_grad and ours.is_leaf


@pytest.mark.parametrize("data", [[1, 2, 3], [[1.5, 2.0], [3.0, -4.25]], (True, False), (2, 3), numpy.arange(4)])
def test_tensor_of_data_copies_into_the_default_dtype(data):
    if isinstance(data, numpy.ndarray):
        # NOTE: a NumPy array is cupynet's internal constructor (wrapped as is); FloatTensor converts it
        _same(cupynet.FloatTensor(data), torch.FloatTensor(data))
        return
    _same(cupynet.Tensor(data), torch.Tensor(data))


@pytest.mark.parametrize("name", TYPED)
@pytest.mark.parametrize("args", [(2, 3), ([1, 0, 2],), ([[1.0, 2.0]],), ()])
def test_typed_constructors_match_torch(name, args):
    # NOTE: torch leaves a sized tensor uninitialised (cupynet fills zeros): values are compared for data only
    _same(getattr(cupynet, name)(*args), getattr(torch, name)(*args), values=len(args) == 1)


def test_typed_constructor_converts_a_numpy_array_as_gcn_does():
    host = numpy.array([[0, 1, 1], [1, 0, 0]], dtype=numpy.int32)
    _same(cupynet.FloatTensor(host), torch.FloatTensor(host))
    _same(cupynet.LongTensor(numpy.array([2, 0, 1])), torch.LongTensor(numpy.array([2, 0, 1])))
    assert cupynet.FloatTensor(host).array is not host


def test_a_tensor_of_the_same_dtype_is_shared_as_torch_aliases_it():
    x = cupynet.tensor([1.0, 2.0])
    for made in (cupynet.Tensor(x), cupynet.FloatTensor(x)):
        made[0] = 7.0
        assert x.array[0] == 7.0


@pytest.mark.parametrize("name", TYPED)
def test_isinstance_asks_the_dtype_as_torch(name):
    for dtype in ("float32", "float64", "int64", "bool"):
        ours = isinstance(cupynet.zeros(2, dtype=getattr(cupynet, dtype)), getattr(cupynet, name))
        assert ours == isinstance(torch.zeros(2, dtype=getattr(torch, dtype)), getattr(torch, name))
    assert not isinstance(numpy.zeros(2, numpy.float32), getattr(cupynet, name))


def test_parameter_from_legacy_sizes_trains():
    weight = cupynet.nn.Parameter(cupynet.Tensor(3, 2))
    cupynet.nn.init.xavier_normal_(weight)
    (cupynet.ones(1, 3) @ weight).sum().backward()
    numpy.testing.assert_array_equal(weight.grad.array, numpy.ones((3, 2), numpy.float32))


@pytest.mark.parametrize("call, error, match", [
    (lambda: cupynet.FloatTensor("ab"), TypeError, "invalid data type 'str'"),
    (lambda: cupynet.Tensor({1: 2}), TypeError, "invalid data type 'dict'"),
    (lambda: cupynet.FloatTensor(1.5), TypeError, r"data must be a sequence \(got float\)"),
    (lambda: cupynet.Tensor(True), TypeError, r"data must be a sequence \(got bool\)"),
    (lambda: cupynet.LongTensor([[1, 2], [3]]), TypeError, "sequences of numbers of one shape"),
    (lambda: cupynet.FloatTensor(cupynet.arange(3)), TypeError, "expected a tensor of dtype float32, got int64"),
    (lambda: cupynet.Tensor(2, -1), RuntimeError, "negative dimension"),
    (lambda: cupynet.Tensor(2, 1.5), TypeError, r"expected sizes as ints or one sequence of data, got \(int, "),
    (lambda: cupynet.IntTensor([None]), TypeError, "elements of dtype object"),
])
def test_bad_arguments_name_what_was_expected(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize("fn", [cupynet.zeros, cupynet.ones, cupynet.empty, cupynet.rand, cupynet.randn])
def test_factories_take_size_by_keyword_as_torch(fn):
    assert fn(size=(2, 3)).shape == (2, 3) == tuple(getattr(torch, fn.__name__)(size=(2, 3)).shape)
    assert fn(size=[4]).shape == (4,)
    with pytest.raises(TypeError, match=f"{fn.__name__}\\(\\) got multiple values for argument 'size'"):
        fn(2, size=(2, 3))


def test_variable_is_a_new_leaf_sharing_the_data_as_torch():
    # NOTE: issue 13: the older tutorials wrap every tensor in autograd.Variable (nlp/sequence_models_tutorial)
    from cupynet.autograd import Variable
    data = cupynet.ones(2)
    for requires_grad in (False, True):
        ours, theirs = Variable(data, requires_grad=requires_grad), torch.autograd.Variable(
            torch.ones(2), requires_grad=requires_grad)
        assert ours is not data and ours.array is data.array
        assert (ours.requires_grad, ours.is_leaf) == (theirs.requires_grad, theirs.is_leaf) == (requires_grad, True)
    graph = cupynet.ones(2, requires_grad=True) * 2
    assert Variable(graph).grad_fn is None and isinstance(graph, Variable) and not isinstance(1.0, Variable)
    with pytest.warns(UserWarning, match="volatile was removed"):
        assert not Variable(data, volatile=True).requires_grad


@pytest.mark.parametrize("call, error, match", [
    (lambda: cupynet.autograd.Variable([1.0, 2.0]), TypeError, "Variable data has to be a tensor, but got list"),
    (lambda: cupynet.autograd.Variable(cupynet.arange(2), requires_grad=True), RuntimeError,
     "only Tensors of floating point and complex dtype can require gradients"),
])
def test_variable_refuses_what_torch_refuses(call, error, match):
    with pytest.raises(error, match=match):
        call()
