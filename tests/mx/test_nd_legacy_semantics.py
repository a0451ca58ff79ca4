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
