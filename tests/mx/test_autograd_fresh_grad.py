"""NDArray._fresh_grad as in MXNet 1.9.1: False for a new gradient buffer, True once a
backward() wrote it, settable (False again after an optimizer step), untouched by a
backward that does not reach the array (a detached path)."""
import gc

from kiln import autograd
from kiln.mx import nd


def test_fresh_after_backward_and_cleared_by_hand():
    x = nd.ones((2, 2))
    x.attach_grad()
    assert x._fresh_grad is False
    with autograd.record():
        y = x * 3
    y.backward()
    assert x._fresh_grad is True
    x._fresh_grad = False
    assert x._fresh_grad is False
    x.attach_grad()                    # a new buffer is not fresh
    with autograd.record():
        y = x * 3
    y.backward()
    assert x._fresh_grad is True
    x.attach_grad()
    assert x._fresh_grad is False


def test_a_detached_path_leaves_the_flag():
    x, y = nd.ones((2,)), nd.ones((2,))
    autograd.mark_variables([x, y], [nd.zeros((2,)), nd.zeros((2,))])
    with autograd.record():
        z = (x + 2).detach() + y
    z.backward()
    assert y._fresh_grad is True and x._fresh_grad is False


def test_the_flag_of_a_dropped_array_is_forgotten():
    from kiln._core import autograd as core
    x = nd.ones((3,))
    x.attach_grad()
    with autograd.record():
        y = x * 2
    y.backward()
    key = id(x)
    assert key in core._fresh
    del x, y
    gc.collect()
    assert key not in core._fresh
