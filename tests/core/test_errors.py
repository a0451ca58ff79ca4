"""Errors name the op, the shapes involved and the user's line; never a bare NumPy error."""
import os

import numpy as onp
import pytest

from kiln import np, npx, KilnError, MXNetError
import kiln
from kiln import autograd

THIS_FILE = os.path.basename(__file__)


def raised(fn):
    with pytest.raises(KilnError) as info:
        fn()
    return str(info.value)


def test_dot_shape_mismatch_names_op_shapes_and_line():
    with pytest.raises(KilnError) as info:
        np.dot(np.ones((1, 512)), np.ones((256, 128)))
    msg = str(info.value)
    assert "dot" in msg
    assert "(1, 512)" in msg and "(256, 128)" in msg
    assert THIS_FILE in msg
    assert "np.dot(np.ones((1, 512)), np.ones((256, 128)))" in msg
    assert MXNetError is KilnError


def test_error_reports_the_calling_line_number():
    with pytest.raises(KilnError) as info:
        np.matmul(np.ones((2, 3)), np.ones((2, 3)))
    expected_line = test_error_reports_the_calling_line_number.__code__.co_firstlineno + 2
    assert f"{THIS_FILE}:{expected_line}" in str(info.value)
    assert "matmul" in str(info.value)


@pytest.mark.parametrize("op", ["add", "multiply", "subtract", "maximum", "equal", "divide"])
def test_broadcast_failure_names_op_and_shapes(op):
    msg = raised(lambda: getattr(np, op)(np.ones((2, 3)), np.ones((4,))))
    assert op in msg and "(2, 3)" in msg and "(4,)" in msg and THIS_FILE in msg


def test_operator_broadcast_failure():
    msg = raised(lambda: np.ones((2, 3)) + np.ones((3, 2)))
    assert "add" in msg and "(2, 3)" in msg and "(3, 2)" in msg


@pytest.mark.parametrize("call", [
    lambda: np.sum(np.ones((2, 3)), axis=2),
    lambda: np.ones((2, 3)).mean(axis=-3),
    lambda: np.max(np.ones(3), axis=1),
    lambda: np.argmax(np.ones((2, 2)), axis=5),
    lambda: np.concatenate([np.ones((2, 2)), np.ones((2, 2))], axis=2),
    lambda: np.transpose(np.ones((2, 3)), (0, 2)),
    lambda: np.expand_dims(np.ones(2), 3),
    lambda: np.sum(np.ones((2, 3)), axis=(0, 0)),
    lambda: np.sum(np.ones((2, 3)), axis=1.5),
])
def test_bad_axis(call):
    msg = raised(call)
    assert "axis" in msg or "axes" in msg


@pytest.mark.parametrize("call", [
    lambda: np.zeros((2, 2), dtype="complex64"),
    lambda: np.ones(3, dtype="nonsense"),
    lambda: np.ones(3).astype("str"),
    lambda: np.array([1, 2], dtype=object),
    lambda: np.arange(3, dtype="float128") if hasattr(onp, "float128") else np.ones(1, "U3"),
])
def test_bad_dtype(call):
    assert "dtype" in raised(call)


def test_reshape_size_mismatch():
    msg = raised(lambda: np.arange(12).reshape(5, 3))
    assert "reshape" in msg and "12" in msg and "(5, 3)" in msg and THIS_FILE in msg
    assert "reshape" in raised(lambda: np.arange(12).reshape(-1, 5))
    assert "reshape" in raised(lambda: np.arange(12).reshape(-1, -1))


def test_other_shape_errors():
    assert "concatenate" in raised(lambda: np.concatenate([np.ones((2, 3)), np.ones((2, 4))]))
    assert "stack" in raised(lambda: np.stack([np.ones(2), np.ones(3)]))
    assert "broadcast_to" in raised(lambda: np.broadcast_to(np.ones((2, 3)), (3, 3)))
    assert "split" in raised(lambda: np.split(np.ones(5), 2))
    assert "squeeze" in raised(lambda: np.squeeze(np.ones((2, 3)), axis=0))
    assert "tensordot" in raised(lambda: np.tensordot(np.ones((2, 3)), np.ones((2, 3)), 1))
    msg = raised(lambda: npx.fully_connected(np.ones((2, 5)), np.ones((3, 4)), num_hidden=3))
    assert "fully_connected" in msg and "(3, 4)" in msg


def test_setitem_errors():
    x = np.ones((2, 3))
    with pytest.raises(KilnError):
        x[0] = np.ones(4)
    with pytest.raises(KilnError):
        x[:, 1] = np.ones((2, 2))
    with pytest.raises((KilnError, IndexError)):
        x[5] = 1



def test_setitem_of_an_empty_selection_checks_the_value_when_traced_too():
    # found by the fuzzer's size stage: v[[1, 0]] = v on a (3, 0) array raised eagerly
    # (NumPy checks the value's shape against the empty selection) and ran compiled
    def f(a):
        v = a * 1
        v[[1, 0]] = v
        return v
    x = np.ones((3, 0))
    with pytest.raises(KilnError):
        f(x)
    with pytest.raises(KilnError):
        kiln.hybridize(f, backend="numpy", static_shape=True)(x)

def test_inplace_shape_and_dtype_errors():
    x = np.ones((2, 3))
    with pytest.raises(KilnError):
        x += np.ones((4, 2, 3))
    i = np.array(onp.arange(3))
    with pytest.raises(KilnError):
        i += 0.5


def test_backward_errors():
    x = np.ones(2)
    with pytest.raises(KilnError):
        (x * 2).backward()
    with pytest.raises(KilnError):
        autograd.grad(x * 2, x)


def test_item_and_conversion_errors():
    assert "item" in raised(lambda: np.ones(2).item())
    assert "float" in raised(lambda: float(np.ones(3)))


def test_bad_shapes_in_creation():
    assert "negative" in raised(lambda: np.ones((2, -3)))
    assert "shape" in raised(lambda: np.zeros("abc"))


def test_errors_are_not_bare_numpy_errors():
    """Whatever the cause, kernels' NumPy errors come back wrapped with the op's name."""
    cases = [
        lambda: np.ones((2, 3)) @ np.ones((4, 5)),
        lambda: np.ones((3,)).reshape((2, 2)),
        lambda: npx.convolution(np.ones((1, 1, 2, 2)), np.ones((1, 1, 3, 3)), kernel=(3, 3),
                                num_filter=1, no_bias=True),
        lambda: npx.one_hot(np.array([0, 1]), 2) + np.ones(3),
        lambda: np.take(np.ones((2, 2)), np.array([0.5]), axis=5),
    ]
    for case in cases:
        with pytest.raises(KilnError) as info:
            case()
        assert THIS_FILE in str(info.value)


@pytest.mark.parametrize("call", [
    lambda: np.ones((2, 2))[0.5],
    lambda: np.ones((2, 2)).reshape("a"),
    lambda: np.random.normal(size=(2, "a")),
    lambda: np.linspace(0, 1, -1),
    lambda: np.eye(-1),
    lambda: np.arange("a"),
    lambda: np.full((2,), "x"),
    lambda: np.ones(3)[[0.5]],
    lambda: np.ones((2, 2))[0, 0, 0],
])
def test_bad_arguments_give_kiln_errors(call):
    assert THIS_FILE in raised(call)
