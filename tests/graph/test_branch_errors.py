"""A branch of an array-valued `if` that raises when traced for some shapes (a max of an
empty array) runs eagerly for that signature: eager Python runs it only if taken."""
import numpy as onp
import pytest

import kiln
from kiln import np
from kiln.hybrid.fallback import HybridizeError, HybridizeFallbackWarning


def nested(a0):
    v1 = a0 * 1.0
    if (v1 > 0).any():
        if np.abs(a0).max() < 1.5:
            v1 = np.abs(v1)
        v1 = v1 * -2
    return v1


def test_an_untaken_branch_that_cannot_be_traced_for_an_empty_input_runs_eagerly():
    h = kiln.hybridize(nested)
    full = np.ones((2, 3))
    onp.testing.assert_array_equal(h(full).asnumpy(), nested(full).asnumpy())
    with pytest.warns(HybridizeFallbackWarning, match="then branch raises"):
        got = h(np.zeros((0, 3)))
    assert got.shape == (0, 3)
    # the compiled program of the first signature still serves it
    onp.testing.assert_array_equal(h(full * 0.5).asnumpy(), nested(full * 0.5).asnumpy())


def test_strict_mode_names_the_branch():
    h = kiln.hybridize(nested, strict=True)
    with pytest.raises(HybridizeError, match="then branch raises for these shapes"):
        h(np.zeros((0, 3)))
