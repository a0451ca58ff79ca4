"""A count of writes into arrays, so that compiled code can keep copies of parameters.

A compiled program may keep a parameter in a form made for its kernels (weights packed for
the BLAS, see kiln/backend/c/packed.py). Such a copy is valid while the parameter is
unchanged, and kiln tells that by counting rather than by comparing data: every place where
kiln writes into an existing array, or points a program at a different parameter array,
calls `arrays_written()`. A copy made at one count is reused only while the count stays.

The writes counted are kiln's own: in-place operators and setitem on a kiln array, the
optimizers' updates (through a Trainer or called directly), Parameter.set_data and
initialization, np.random.shuffle, and the parameter updates of a compiled training step.
Each is counted after it is done, so a call that raced with a write and kept what it saw
is followed by a new count, and the next call sees it. A kiln array hands NumPy a
read-only view (`np.asarray(x)`), so an ordinary write through NumPy raises; code that
makes the view writable again, or writes through its `.base`, goes past the count and may
be served weights as they were before.
"""
import itertools

_counter = None     # a ctypes integer the C runtime reads; None until the runtime starts
_bump = None        # the runtime's atomic increment of it
_generation = 0     # the same count for Python's own caches (kiln/backend/dnnl/derived.py)
# each write takes the next number: `_generation += 1` could count two threads' writes
# as one, and a value derived between them would then be served after the second
_numbers = itertools.count(1)


def arrays_written():
    """Note that some array kiln can see has changed: call after the write."""
    global _generation
    _generation = next(_numbers)
    bump = _bump
    if bump is not None:
        bump()


def generation():
    """A number that changes with every counted write (whether or not the C runtime runs);
    a value derived from arrays at one generation is current while it stays."""
    return _generation


def counter():
    """The shared ctypes integer, or None before the C runtime runs."""
    return _counter


def share_counter(counter, bump):
    """Called by the C runtime once it runs: the count lives in its memory from now on,
    and `bump()` increments it atomically (two threads' writes are never counted as one)."""
    global _counter, _bump
    _counter, _bump = counter, bump

