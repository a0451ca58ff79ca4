"""Text I/O of kiln.np (MXNet's np.genfromtxt and friends), read and written by NumPy."""
import numpy as _onp

from .._core.ndarray import ndarray


def _wrap(result):
    from .creation import array
    return array(result) if isinstance(result, _onp.ndarray) else result


def genfromtxt(*args, **kwargs):
    """NumPy's genfromtxt, as a kiln array (structured dtypes are not supported)."""
    return _wrap(_onp.genfromtxt(*args, **kwargs))


def loadtxt(*args, **kwargs):
    """NumPy's loadtxt: an array read from a text file (float32 for float data, as MXNet returns
    it)."""
    return _wrap(_onp.loadtxt(*args, **kwargs))


def savetxt(fname, X, *args, **kwargs):
    """NumPy's savetxt: write the 1-D or 2-D array `X` to the text file `fname`."""
    data = X._concrete("savetxt") if isinstance(X, ndarray) else X
    _onp.savetxt(fname, data, *args, **kwargs)
