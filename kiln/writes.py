"""A count of writes into arrays, so that compiled code can keep copies of parameters.

A compiled program may keep a parameter in a form made for its kernels (weights packed for
the BLAS, see kiln/backend/c/packed.py). Such a copy is valid while the parameter is
unchanged, and kiln tells that by counting rather than by comparing data: every place where
kiln writes into an existing array, or points a program at a different parameter array,
calls `arrays_written()`. A copy made at one count is reused only while the count stays.

The writes counted are kiln's own: in-place operators and setitem on a kiln array, the
Trainer's and optimizers' updates, Parameter.set_data and initialization, and the parameter
updates of a compiled training step. A kiln array hands NumPy a read-only view
(`np.asarray(x)`), so writes through NumPy cannot bypass the count.
"""
_counter = None     # a ctypes integer the C runtime reads; None until the runtime starts


def arrays_written():
    """Note that some array kiln can see may have changed."""
    counter = _counter
    if counter is not None:
        counter.value += 1


def counter():
    """The shared ctypes integer, or None before the C runtime runs."""
    return _counter


def share_counter(counter):
    """Called by the C runtime once it runs: the count lives in its memory from now on."""
    global _counter
    _counter = counter

