"""Small MXNet 1.x NDArray semantics: truth values and broadcast_like over chosen axes.
Expected values come from real MXNet 1.9.1."""
import pytest

from kiln import nd
from kiln._core.base import KilnError


def test_truth_value_of_an_empty_array_is_false():
    assert not bool(nd.array([]))
    assert not bool(nd.zeros((1,)))
    assert bool(nd.ones((1,)))
    with pytest.raises(ValueError):
        bool(nd.ones((2, 3)))


@pytest.mark.parametrize("lhs, rhs, lhs_axes, rhs_axes, expected", [
    ((1, 2, 1, 3), (5, 6, 7, 8), (0, 2), (1, 3), (6, 2, 8, 3)),
    ((2, 1), (1, 7, 9, 1, 1), (1,), (-3,), (2, 9)),
    ((1, 7, 9, 1, 1), (9,), (-2,), (0,), (1, 7, 9, 9, 1)),
])
def test_broadcast_like_pairs_lhs_axes_with_rhs_axes(lhs, rhs, lhs_axes, rhs_axes, expected):
    out = nd.broadcast_like(nd.ones(lhs), nd.ones(rhs), lhs_axes=lhs_axes, rhs_axes=rhs_axes)
    assert out.shape == expected


def test_broadcast_like_refuses_empty_axes_and_non_unit_axes():
    with pytest.raises(KilnError):
        nd.broadcast_like(nd.ones((1, 2)), nd.ones((3, 2)), lhs_axes=(), rhs_axes=())
    with pytest.raises(KilnError):
        nd.broadcast_like(nd.ones((2, 3)), nd.ones((5, 6)), lhs_axes=(0,), rhs_axes=(0,))


def test_crop_assign_returns_the_array_with_a_region_replaced():
    # real MXNet 1.9.1 values; `out=` writes the result back
    x = nd.ones((2, 3, 4))
    nd._internal._crop_assign(x, nd.zeros((2, 1, 3)), begin=(0, 0, 0), end=(2, 1, 3), out=x)
    assert x.asnumpy()[:, 0, :].tolist() == [[0, 0, 0, 1], [0, 0, 0, 1]]
    assert x.asnumpy()[:, 1:, :].min() == 1
    y = nd.ones((2, 3))
    out = nd._internal._slice_assign_scalar(y, scalar=5, begin=(None, 1), end=(None, None),
                                            step=(None, 2))
    assert out.asnumpy().tolist() == [[1, 5, 1], [1, 5, 1]]
    assert y.asnumpy().tolist() == [[1, 1, 1], [1, 1, 1]]


def test_pickled_state_is_mxnets_array_record():
    # the handle bytes of real MXNet 1.9.1's nd.array([[1, 2], [3, 4]]).__getstate__()
    handle = bytes.fromhex("c9fa93f9000000000200000002000000000000000200000000000000010000"
                           "0000000000000000000000803f000000400000404000008040")
    assert bytes(nd.array([[1, 2], [3, 4]]).__getstate__()["handle"]) == handle
    restored = nd.zeros((1,))
    restored.__setstate__({"handle": bytearray(handle)})
    assert restored.asnumpy().tolist() == [[1, 2], [3, 4]]
    on_gpu = bytearray(handle)
    on_gpu[28:32] = (2).to_bytes(4, "little")     # device type 2 (gpu): loads on the cpu
    restored.__setstate__({"handle": on_gpu})
    assert restored.shape == (2, 2)
    with pytest.raises(KilnError):
        restored.__setstate__({"handle": bytearray(handle[:-2])})


def test_cached_op_calls_a_symbol_with_arrays_in_input_order():
    # real MXNet 1.9.1: inputs (data, weight, bias) in list_inputs() order; 4*9 + 1 + 2 = 39
    from kiln import sym, autograd
    op = nd.CachedOp(sym.Convolution(kernel=(3, 3), num_filter=10) + 2)
    data, weight, bias = nd.ones((1, 4, 5, 5)), nd.ones((10, 4, 3, 3)), nd.ones((10,))
    out = op(data, weight, bias)
    assert out.shape == (1, 10, 3, 3) and float(out[0, 0, 0, 0]) == 39.0
    written = nd.zeros((1, 10, 3, 3))
    op(data, weight, bias * 2, out=written)
    assert float(written[0, 0, 0, 0]) == 40.0
    bias.attach_grad()
    with autograd.record():
        total = op(data, weight, bias).sum()
    total.backward()
    assert bias.grad.asnumpy().tolist() == [9.0] * 10
    with pytest.raises(KilnError):
        op(data, weight)
