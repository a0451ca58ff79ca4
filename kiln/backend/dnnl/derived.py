"""Values oneDNN derives from an eager array, kept while the array lives, unwritten.

An eager training step asks oneDNN for the same derived value more than once: max
pooling's backward needs the workspace (where each maximum was) that its forward made,
and the op used to run the forward again to get it. The op that makes such a value files
it here under the NumPy array it came from; a later op on the same array takes it instead
of making it again. An entry goes when its array dies (a weakref callback), and is not
served after any write kiln counts (kiln/_core/writes.py: in-place operators, setitem, optimizer
updates), so a value is never older than the array it stands for.
"""
import contextlib
import threading
import weakref

from ..._core import writes

_kept = {}          # id(array) -> (weak reference to it, {key: (generation, value)})
_lock = threading.RLock()     # re-entered: freeing a value under it runs _release
_bytes = [0]        # the NumPy values kept, until each is freed


def limit_bytes():
    """How much the kept values may hold: as much as kiln's cache of large NumPy blocks
    (an eighth of physical memory, 256 MB to 4 GB). An eager GoogLeNet step at batch 128
    keeps about 250 MB of blocked activations; past the limit, ops convert as they did
    without keeping (a RegNet's step keeps gigabytes of activations already)."""
    from ..c.array_cache import LIMIT_BYTES
    return LIMIT_BYTES


def held_bytes():
    return _bytes[0]


def _release(n):
    with _lock:
        _bytes[0] -= n


_local = threading.local()


@contextlib.contextmanager
def suspended():
    """Neither serve nor keep values on this thread: for programs that rewrite their
    buffers on each call without a counted write (kiln/backend/numpy_exec.py), where an
    array's identity says nothing of its contents."""
    before = getattr(_local, "off", False)
    _local.off = True
    try:
        yield
    finally:
        _local.off = before


def active():
    return not getattr(_local, "off", False)


def get(array, key):
    """The value filed under (array, key), or None."""
    if not active():
        return None
    with _lock:
        entry = _kept.get(id(array))
        if entry is None or entry[0]() is not array:
            return None
        got = entry[1].get(key)
    if got is None or got[0] != writes.generation():
        return None
    return got[1]


_purged = [0]        # the generation at which stale entries were last dropped


def put(array, key, value):
    """File value under (array, key) until the array dies or kiln writes."""
    if not active():
        return
    generation = writes.generation()
    with _lock:
        if _purged[0] != generation:
            # an array that outlives its step (a batch the caller keeps) must not keep
            # its stale values alive
            _purged[0] = generation
            for entry in list(_kept.values()):
                for k in [k for k, v in entry[1].items() if v[0] != generation]:
                    del entry[1][k]
        entry = _kept.get(id(array))
        if entry is None or entry[0]() is not array:
            ref = weakref.ref(array, lambda r, i=id(array): _drop(i, r))
            entry = _kept[id(array)] = (ref, {})
        entry[1][key] = (generation, value)
        n = getattr(value, "nbytes", 0)
        if n:
            _bytes[0] += n
            weakref.finalize(value, _release, n)


def _drop(i, ref):
    with _lock:
        entry = _kept.get(i)
        if entry is not None and entry[0] is ref:
            del _kept[i]


def size():
    """Arrays with kept values (tests)."""
    with _lock:
        return len(_kept)
