"""A graded array, its leaf and its gradient are freed by reference counting alone: the
leaf on the tape refers back to its array weakly (no cycle waiting for a full collection)."""
import gc
import weakref

import kiln
from kiln import autograd


def _without_gc(fn):
    gc.collect()
    gc.disable()
    try:
        return fn()
    finally:
        gc.enable()


def test_dropped_graded_array_is_freed_without_a_collection():
    def run():
        x = kiln.np.ones((4, 5))
        x.attach_grad()
        with autograd.record():
            y = (x * 2).sum()
        y.backward()
        assert float(x.grad.sum()) == 40.0
        probes = weakref.ref(x), weakref.ref(x.grad)
        del x, y
        return probes
    probes = _without_gc(run)
    assert probes[0]() is None and probes[1]() is None


def test_gradient_reaching_a_dropped_leaf_is_dropped():
    x = kiln.np.ones((3,))
    x.attach_grad()
    with autograd.record():
        y = x * 3
    probe = weakref.ref(x)
    del x
    assert probe() is None
    y.backward()                    # the gradient has nowhere to go: no error
