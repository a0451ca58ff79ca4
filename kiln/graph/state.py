"""State that a compiled program reads and writes in place, besides Parameters.

A StateVar wraps a NumPy buffer (an optimizer's momentum, the scalars of one update). Like
a Parameter, `data()` gives the eager array outside a trace and a symbolic stand-in inside
one; an in-place write to the stand-in becomes a state output that the compiled program
copies back into the buffer after each call. Eager and compiled code share the buffer.
"""
from .._core.ndarray import ndarray
from .._core import trace


class StateVar:
    grad_req = "null"

    def __init__(self, array, name):
        self._data = ndarray._wrap(array)
        self.name = name

    def data(self):
        ctx = trace.current()
        if ctx is not None:
            return ctx.param_array(self, self._data)
        return self._data

    def __repr__(self):
        return f"StateVar({self.name}, shape={self._data.shape})"
