"""Regressions from differential fuzzing under autograd: hybridized code records and
differentiates what eager code does (the cases of tests/hybrid/test_compiled_equals_eager.py that
involve record(), gradients through casts and written block arguments)."""
import contextlib

import numpy as onp
import pytest

from kiln import np
from kiln import autograd
from test_compiled_equals_eager import arr, assert_equal_everywhere


def test_one_element_array_into_a_scalar_slot_under_record():
    """The size-1 rule (MXNet's `preds[i] = net(x)`) held eagerly but not under record()."""
    def f(a0):
        a0[-1] = a0
        return a0
    assert_equal_everywhere(f, np.array([2], dtype="int32"), grad=False)
    a = np.zeros((2, 2))
    with autograd.record():
        a[0, 1] = np.ones((1, 1)) * 3
    assert a.asnumpy()[0, 1] == 3


@pytest.mark.parametrize("layer", ["dense", "rnn"])
def test_written_argument_and_block_parameters_with_an_unused_output(layer):
    """The backward program pruned for an output no loss used had dropped the block's
    parameters, and was called with them all (C: 'expected 0 parameters, got 1')."""
    from kiln import init
    from kiln.gluon import nn, rnn
    block = nn.Dense(2, in_units=3) if layer == "dense" else rnn.RNN(2, input_size=3)
    block.initialize(init.Uniform(0.5))

    def f(a0, a1):
        v1 = block(a1 if layer == "dense" else a1.reshape((a1.shape[0], 1, 3)))
        a1[0] = np.linalg.norm(v1)
        return a0[:, 1:]
    assert_equal_everywhere(f, arr(2, 2), arr(1, 3))


@pytest.mark.parametrize("through", ["copy", "astype same type"])
def test_gradient_passes_a_same_type_cast_of_an_integer_array(through):
    """A copy of an int array recorded as cast(int32 -> int32) stopped the gradient in
    eager, where the trace's alias passed it (fuzz seed 14, #153). A same-type cast is a
    copy; a cast from an integer to another type still stops the gradient, on both sides."""
    def f(a):
        v = (a * 3).astype("int32")
        v = np.copy(v) if through == "copy" else v.astype("int32", copy=True)
        return np.sinh(v)

    def g(a):
        return np.sinh((a * 3).astype("int32").astype("float32"))
    assert_equal_everywhere(f, arr(2, 3))
    assert_equal_everywhere(g, arr(2, 3))
    a = arr(2, 3)
    a.attach_grad()
    with autograd.record():
        y = f(a)
    y.backward()
    assert onp.abs(a.grad.asnumpy()).min() >= 1.0       # 3 * cosh(.) >= 3, nothing stopped it


def test_detach_of_an_untracked_array_sees_a_later_write():
    """detach() shares memory. Of an array no trace or tape knew, it was not linked, so a
    write that a trace (or record()) turns into a rebinding left it stale: compiled 1 where
    eager gives 4."""
    def f(a0):
        b = np.ones((3,))
        d = b.detach()
        v = b[0:2]
        b += a0.sum()
        return d + 0, v + 0
    assert_equal_everywhere(f, arr(2))
    for record in (False, True):
        b = np.ones((3,))
        with autograd.record() if record else contextlib.nullcontext():
            d = b.detach()
            b += 5
        assert (d.asnumpy() == 6).all(), record
