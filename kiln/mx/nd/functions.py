"""MXNet 1.x's NDArray namespace (`kiln.nd`, `kiln.ndarray`), mapped onto kiln.

`kiln.ndarray` stays the module of kiln's one array type; its module-level lookups (and
kiln.symbol's, the `F` of hybrid_forward) find these first (namespace.py, kiln/mx/f_namespace.py),
then npx and np. Where MXNet 1.x and its numpy interface differ, these follow 1.x: float32 arrays by
default, `shape=` in random functions, `concat(*arrays, dim=1)`, `dot` over the last and
first axes, `save`/`load` in MXNet's binary format.

The MXNet op names (FullyConnected, Activation, ...) are the entries of kiln/mx/ops;
called with Symbols they build a symbol node, called with arrays they compute.
"""
import functools

import numpy as _np

from ... import np as knp
from ..._core.base import KilnError, where_in_user_code
from ..ops import OPS
from ..util import check_legacy_shape
from ..._core.context import placed
from ..._core.ndarray import ndarray


# set by kiln/mx/nd/__init__.py from kiln/mx/nd/sparse: the sparse array classes, the
# dispatcher of nd functions given a sparse operand, sparse zeros, sparse.array, and the
# sparse arrays' file records (to_record, from_record)
SPARSE = {"types": (), "call": None, "zeros": None, "array": None, "to_record": None,
          "from_record": None}


def sparse_aware(name, fn, keeps=("csr", "row_sparse")):
    """`fn` (an nd function over dense arrays) that, given a sparse operand, goes through the
    sparse dispatcher: a sparse implementation, or `fn` on dense copies whose result keeps
    the storage when `fn` maps zeros to zeros (kiln/mx/nd/sparse/ops.py) and MXNet has a
    kernel for that storage (`keeps`)."""
    @functools.wraps(fn)        # keeps fn's signature: symbol nodes derive inputs from it
    def call(*args, **kwargs):
        sparse = SPARSE["types"]
        if any(isinstance(a, sparse) for a in args) or any(
                isinstance(v, sparse) for v in kwargs.values()):
            out = SPARSE["call"](name, fn, args, kwargs)
            return out if getattr(out, "stype", "default") in keeps + ("default",) \
                else out.tostype("default")
        return fn(*args, **kwargs)
    return call


def _dtype(dtype):
    return _np.dtype(dtype or "float32")


def array(source_array, ctx=None, dtype=None):
    """An NDArray from `source_array` (float32 unless `dtype` says otherwise, as in MXNet 1.x)."""
    if isinstance(source_array, ndarray):
        return placed(source_array.astype(dtype or source_array.dtype), ctx)
    if isinstance(source_array, SPARSE["types"]) or type(source_array).__module__.startswith(
            "scipy.sparse"):            # a sparse array or SciPy matrix: a sparse copy (MXNet)
        return SPARSE["array"](source_array, ctx=ctx, dtype=dtype)
    return placed(ndarray._wrap(_np.array(source_array, dtype=_dtype(dtype))), ctx)


def zeros(shape, ctx=None, dtype=None, stype=None, out=None, **_):
    """An NDArray of zeros of `shape` (float32 by default); `stype` 'csr' or 'row_sparse'
    makes an empty sparse array (nd.sparse.zeros). `out=`: written into that array."""
    if stype not in (None, "default"):
        return SPARSE["zeros"](stype, shape, ctx=ctx, dtype=dtype)
    check_legacy_shape("zeros", shape)
    return _filled(knp.zeros(shape, dtype=_dtype(dtype), ctx=ctx), out, "zeros")


def ones(shape, ctx=None, dtype=None, out=None, **_):
    """An NDArray of ones of `shape` (float32 by default); `out=`: written into that array."""
    check_legacy_shape("ones", shape)
    return _filled(knp.ones(shape, dtype=_dtype(dtype), ctx=ctx), out, "ones")


def _filled(result, out, name):
    return result if out is None else _write_out(name, result, out)


def empty(shape, ctx=None, dtype=None, stype=None):
    """An NDArray of `shape` (filled with zeros: kiln never hands out uninitialized memory);
    `stype` 'csr' or 'row_sparse' makes an empty sparse array."""
    if stype not in (None, "default"):
        return SPARSE["zeros"](stype, shape, ctx=ctx, dtype=dtype)
    # allocated without shape inference, so legacy mode takes a 0 here as MXNet does
    return knp.zeros(shape, dtype=_dtype(dtype), ctx=ctx)


def full(shape, val, ctx=None, dtype=None, out=None, **_):
    """An NDArray of `shape` filled with `val`; `out=`: written into that array."""
    return _filled(knp.full(shape, val, dtype=_dtype(dtype), ctx=ctx), out, "full")


def arange(start, stop=None, step=1.0, repeat=1, infer_range=None, ctx=None, dtype=None):
    """Values from `start` to `stop` by `step` (float32 by default), each repeated `repeat` times.
    """
    # NumPy's arange in the requested dtype (an integer dtype truncates start and step first)
    out = ndarray._wrap(_np.arange(start, stop, step, dtype=_dtype(dtype)))
    return placed(knp.repeat(out, int(repeat)) if int(repeat) > 1 else out, ctx)


def zeros_like(data, **_):
    """An NDArray of zeros with the shape and dtype of `data`."""
    return knp.zeros_like(data)


def ones_like(data, **_):
    """An NDArray of ones with the shape and dtype of `data`."""
    return knp.ones_like(data)


def waitall():
    """kiln computes synchronously; nothing is pending."""


def _saved(value, what):
    if isinstance(value, SPARSE["types"]):      # its parts, in MXNet's sparse record
        return SPARSE["to_record"](value)
    return value._concrete(what)


def _named_values(data, what):
    if isinstance(data, (ndarray,) + SPARSE["types"]):
        return [_saved(data, what)], None
    if isinstance(data, dict):
        for k in data:
            if not isinstance(k, str):
                raise KilnError(f"{what}: dict keys must be strings, got {k!r}"
                                + where_in_user_code())
        return [_saved(v, what) for v in data.values()], list(data)
    if isinstance(data, (list, tuple)):
        return [_saved(v, what) for v in data], None
    raise KilnError(f"{what}: expected an NDArray, a list or a dict of them, got "
                    f"{type(data).__name__}" + where_in_user_code())


def save(fname, data):
    """MXNet's binary NDArray format, which MXNet itself loads (export/mxnet_params.py)."""
    from ...export import mxnet_params
    arrays, names = _named_values(data, "nd.save")
    mxnet_params.write(fname, arrays, names)


def load(fname):
    """A dict (named file) or list of arrays, from MXNet's binary format or kiln's npz."""
    from ...export import mxnet_params
    try:
        with open(fname, "rb") as f:
            head = f.read(8)
    except OSError as exc:
        raise KilnError(f"nd.load: cannot read {fname}: {exc}") from None
    if not mxnet_params.is_mxnet_params(head):
        from ...npx.io import load as npz_load
        return npz_load(fname)
    arrays, names = mxnet_params.read(fname, sparse=True)
    arrays = [SPARSE["from_record"](a) if isinstance(a, mxnet_params.SparseRecord)
              else ndarray._wrap(a) for a in arrays]
    return dict(zip(names, arrays)) if names is not None else arrays


def concat(*data, dim=1, **kw):
    """The arrays joined along `dim` (1 by default, as MXNet's concat)."""
    return mx_function("Concat")(*data, dim=dim, **kw)


# ---- MXNet ops by name: symbols build nodes, arrays compute -------------------------------

_functions = {}


def _is_symbol(value):
    from ..sym.symbol import Symbol
    return isinstance(value, Symbol)


def mx_function(name):
    fn = _functions.get(name)
    if fn is not None:
        return fn
    op = OPS[name]

    def call(*args, **kwargs):
        if op.variadic and len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        if any(_is_symbol(a) for a in args) or any(_is_symbol(v) for v in kwargs.values()):
            from ..sym.symbol import call_op
            return call_op(name, args, kwargs)
        kwargs.pop("name", None)
        sparse = SPARSE["types"]
        if any(isinstance(a, sparse) for a in args) or any(
                isinstance(v, sparse) for v in kwargs.values()):
            return SPARSE["call"](name, call, args, kwargs)
        out = kwargs.pop("out", None)
        # NumPy arrays and lists in input positions become arrays; later ones are attrs
        n_inputs = len(args) if op.variadic else len(op.input_names(kwargs))
        args = tuple(knp.asarray(a) if k < n_inputs and isinstance(a, (_np.ndarray, list))
                     else a for k, a in enumerate(args))
        result = op.fn(*args, **kwargs)
        return result if out is None else _write_out(name, result, out)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"MXNet's {name} (kiln/mx/ops), on arrays or Symbols."
    _functions[name] = call
    return call


def _write_out(name, result, out):
    """MXNet's `out=`: the result is written into the given array(s), which are returned."""
    results = list(result) if isinstance(result, (list, tuple)) else [result]
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    if len(outs) == len(results) == 1 and isinstance(outs[0], SPARSE["types"]):
        written = outs[0]                   # a sparse out= keeps its storage (MXNet's fallback)
        written._assign(results[0].tostype(written.stype).astype(written.dtype))
        return out
    if len(outs) != len(results) or not all(isinstance(o, ndarray) for o in outs):
        raise KilnError(f"nd.{name}: out= must be {len(results)} array(s), one per output, "
                        f"got {type(out).__name__}" + where_in_user_code())
    for o, r in zip(outs, results):
        if tuple(o.shape) != tuple(r.shape):
            raise KilnError(f"nd.{name}: out= has shape {tuple(o.shape)}, the result has "
                            f"{tuple(r.shape)}" + where_in_user_code())
        o[...] = r
    return out
