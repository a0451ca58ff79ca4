"""Optimizer updates given MXNet 1.x's sparse arrays (registered into kiln/optimizer/base.py,
whose optimizers compute on dense NumPy buffers).

As in MXNet: a row_sparse gradient with an optimizer that updates lazily (`lazy_update`
true: SGD and Adam by default, AdaGrad and Ftrl always) changes only the rows the gradient
stores, in the weight and in every state array; otherwise the update is the dense one on
dense copies. A sparse weight takes the result in its own storage type."""
import numpy as _np

from ...._core.ndarray import ndarray
from ...._core.writes import arrays_written
from .storage import BaseSparseNDArray, RowSparseNDArray


def _dense(x):
    """A NumPy buffer of `x`: a kiln array's own buffer (written in place), or a copy."""
    if isinstance(x, BaseSparseNDArray):
        return x.asnumpy()
    return x._data if isinstance(x, ndarray) else _np.asarray(x)


def _map_state(state, fn):
    if isinstance(state, (list, tuple)):
        return type(state)(_map_state(s, fn) for s in state)
    return None if state is None else fn(state)


def sparse_update(optimizer, index, weight, grad, state):
    """optimizer.update(index, weight, grad, state) where weight or grad is sparse."""
    w, g = _dense(weight), _dense(grad)
    rows = None
    if isinstance(grad, RowSparseNDArray) and getattr(optimizer, "lazy_update", False):
        rows = grad._idx
    if rows is None:
        optimizer.update(index, w, g, state)
    else:
        # the stored rows only: copies of them in, the results written back
        def rows_of(s):
            return _np.ascontiguousarray(_dense(s)[rows])
        row_state = _map_state(state, rows_of)
        w_rows = w[rows]
        optimizer.update(index, w_rows, g[rows], row_state)
        w[rows] = w_rows
        _write_back_rows(state, row_state, rows)
    if isinstance(weight, BaseSparseNDArray):
        weight._assign(ndarray._wrap(w).tostype(weight.stype).astype(weight.dtype))
    arrays_written()


def _write_back_rows(state, row_state, rows):
    if isinstance(state, (list, tuple)):
        for s, r in zip(state, row_state):
            _write_back_rows(s, r, rows)
    elif state is not None:
        _dense(state)[rows] = row_state
