"""MXNet 1.x's `NDArray` class: kiln's one array with MXNet 1.x semantics.

MXNet 1.9 has two array classes over one storage: `mx.nd.NDArray` (1.x semantics) and
`mx.np.ndarray` (NumPy's), a subclass of it, with `as_np_ndarray()` / `as_nd_ndarray()`
switching without a copy. kiln's core array is `mx.np.ndarray`; NDArray is a thin subclass
of it (no slots of its own, so the class of an array just made can be set without a copy)
that overrides only what 1.x does differently:

- the methods of MXNet's NDArray that are its ops' fluent forms (`x.sum()`, `x.max()`,
  `x.clip()`, ... : FLUENT_1X, read from MXNet's ndarray.py) call the `nd` function; the
  reductions (`x.sum()`, `x.max()`, ...) stay the core's, whose full reduction is 0-d where
  MXNet's is (1,): kiln's own tests read `float(x.sum().asnumpy())`;
- `flatten` gives 2-D, `squeeze`/`expand_dims` copy unless `inplace=True` (a view),
  `squeeze` of all-ones dims leaves (1,);
- a Python scalar takes an integer array's dtype before the op, and integer `/` stays
  integer (truncated), as MXNet's scalar and elementwise kernels compute;
- a write of part of an array while autograd records is refused, as in MXNet 1.x;
- results (of operators, indexing and every method) are NDArrays again, and an NDArray
  prints as MXNet 1.x prints it (`<NDArray 2x3 @cpu(0)>`).

`nd` functions return NDArrays when an operand is one or when no operand is an array
(`nd.zeros`, `nd.random.uniform`); given only numpy-class arrays (the `F` of a 1.x-style
hybrid_forward under `npx.set_np()`), they return those, so kiln's numpy world is unchanged.
As in MXNet, `isinstance(x, NDArray)` holds for numpy-class arrays too (its `np.ndarray` is a
subclass of NDArray); `type(x) is NDArray` only for 1.x ones.
"""
import functools
import types

import numpy as _np

from ..._core import autograd
from ..._core.base import KilnError, where_in_user_code
from ..._core.ndarray import ndarray

# methods of MXNet 1.9's NDArray that are `return op.NAME(self, *args, **kwargs)`
# (python/mxnet/ndarray/ndarray.py)
FLUENT_1X = tuple("""
    reshape_like zeros_like ones_like broadcast_axes repeat pad swapaxes split slice
    slice_axis slice_like take one_hot pick sort topk argsort argmax argmax_channel argmin clip
    abs sign shape_array size_array tile transpose flip depth_to_space space_to_depth
    norm round rint fix floor ceil trunc sin cos tan arcsin
    arccos arctan degrees radians sinh cosh tanh arcsinh arccosh arctanh exp expm1 log log10
    log2 log1p sqrt rsqrt cbrt rcbrt square reciprocal relu sigmoid softmax log_softmax
    softmin split_v2 diag broadcast_like
    """.split())

# core methods whose results are arrays of this class again (the rest return other things)
_KEEP_CLASS = tuple("""
    __add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ __mod__ __rmod__
    __pow__ __rpow__ __eq__ __ne__ __lt__ __le__ __gt__ __ge__ __and__ __or__ __xor__
    __floordiv__ __rfloordiv__ __matmul__ __rmatmul__ __neg__ __pos__ __abs__ __invert__
    __iadd__ __isub__ __imul__ __imod__ __ipow__ astype copy detach as_in_context copyto
    reshape tostype dot cumsum any all std var broadcast_to sum nansum prod nanprod mean max min
    """.split())
_SCALAR_OPS = ("__add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ __mod__ __rmod__ "
               "__pow__ __rpow__ __iadd__ __isub__ __imul__ __imod__ __ipow__").split()


class _NDArrayMeta(type):
    """isinstance/issubclass as in MXNet, whose numpy array class derives from NDArray."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, ndarray) if cls is NDArray else super().__instancecheck__(obj)

    def __subclasscheck__(cls, sub):
        if cls is NDArray and isinstance(sub, type) and issubclass(sub, ndarray):
            return True
        return super().__subclasscheck__(sub)


class NDArray(ndarray, metaclass=_NDArrayMeta):
    """MXNet 1.x's NDArray (`mx.nd.NDArray`): the core array with 1.x semantics."""
    __slots__ = ()

    def as_nd_ndarray(self):
        return self

    def as_np_ndarray(self):
        """The same storage (and autograd history) as a numpy-class array."""
        return share(self, ndarray)

    def __repr__(self):
        if self._node is not None:
            return ndarray.__repr__(self)
        shape_info = "x".join(str(d) for d in self.shape)
        return f"\n{self.asnumpy()!s}\n<{type(self).__name__} {shape_info} @{self.context}>"

    __str__ = __repr__

    def __getitem__(self, key):
        out = ndarray.__getitem__(self, key)
        if out.ndim == 0:           # MXNet 1.x has no 0-d arrays: x[0, 0] has shape (1,)
            out = ndarray.reshape(out, (1,))
        return _as_class(out, NDArray)

    def __setitem__(self, key, value):
        if autograd.is_recording() and not _whole_array(self.shape, key):
            raise KilnError("Inplace operations (+=, -=, x[:]=, etc) are not supported when "
                            "recording with autograd (MXNet 1.x's NDArray: only a write of the "
                            "whole array is)" + where_in_user_code())
        ndarray.__setitem__(self, key, value)

    def __reduce__(self):
        return (_unpickled, ndarray.__reduce__(self))

    # ---- 1.x's own forms of numpy-named methods --------------------------------------------
    def flatten(self, inplace=False):
        view = ndarray.reshape(self, (self.shape[0] if self.ndim else 1, -1))
        return _copy_unless(view, inplace)

    def squeeze(self, axis=None, inplace=False):
        kept = _np.squeeze(_np.empty(self.shape, _np.bool_), axis).shape
        if not kept and self.ndim:       # MXNet 1.x has no 0-d result: (1, 1) -> (1,)
            kept = (1,)
        return _copy_unless(ndarray.reshape(self, kept), inplace)

    def expand_dims(self, axis, inplace=False):
        return _copy_unless(ndarray.expand_dims(self, axis), inplace)

    def __truediv__(self, other):
        return _integer_divide(self, other, False)

    def __rtruediv__(self, other):
        return _integer_divide(self, other, True)

    def __itruediv__(self, other):
        self[...] = _integer_divide(self, other, False)
        return self

    __div__, __rdiv__, __idiv__ = __truediv__, __rtruediv__, __itruediv__


def _whole_array(shape, key):
    """Whether basic index `key` selects all of an array of `shape` in order (MXNet 1.x then
    copies the value in without recording an op)."""
    key = key if isinstance(key, tuple) else (key,)
    if not all(k is None or k is Ellipsis or isinstance(k, (slice, int, _np.integer))
               for k in key):
        return False
    key = tuple(k for k in key if k is not None)
    if any(isinstance(k, slice) and (k.step or 1) < 0 for k in key):
        return False
    template = _np.lib.stride_tricks.as_strided(_np.zeros(1, _np.int8), shape, (0,) * len(shape))
    return template[key].shape == tuple(shape)


def _unpickled(rebuild, args):
    return _as_class(rebuild(*args), NDArray)


def _copy_unless(view, inplace):
    return _as_class(view if inplace else ndarray.copy(view), NDArray)


def _is_integer(dtype):
    return _np.issubdtype(dtype, _np.integer)


def _scalar_as(x, other):
    """MXNet's scalar ops compute in the array's dtype: 1.5 is 1 for an int32 array."""
    if _is_integer(x.dtype) and isinstance(other, (float, _np.floating)):
        return int(other)
    return other


def _integer_divide(x, other, reverse):
    """MXNet 1.x's `/`: integer operands give an integer result, truncated toward zero."""
    other = _scalar_as(x, other)
    out = ndarray.__rtruediv__(x, other) if reverse else ndarray.__truediv__(x, other)
    if _is_integer(x.dtype) and (isinstance(other, (int, _np.integer)) or (
            isinstance(other, ndarray) and _is_integer(other.dtype))):
        out = ndarray.astype(out, x.dtype)     # a float quotient cast truncates toward zero
    return _as_class(out, NDArray)


def _as_class(out, cls, operands=()):
    """`out` (an array, or a list/tuple of them) as arrays of `cls`: an array just made
    changes class in place; one of the `operands` is shared into a new object instead."""
    if type(out) is ndarray or type(out) is NDArray:
        if type(out) is cls:
            return out
        if any(out is a for a in operands):
            return share(out, cls)
        out.__class__ = cls
        return out
    if type(out) is list:
        out[:] = [_as_class(o, cls, operands) for o in out]
        return out
    if type(out) is tuple:
        return tuple(_as_class(o, cls, operands) for o in out)
    return out


def share(x, cls):
    """A new `cls` object over `x`'s storage, tape position and context (no copy)."""
    obj = cls._wrap(x._data)
    obj._node, obj._tape, obj._tidx = x._node, x._tape, x._tidx
    obj._grad, obj._grad_req = x._grad, x._grad_req
    ctx = getattr(x, "_ctx", None)
    if ctx is not None:
        obj._ctx = ctx
    if x._node is not None or x._view is not None:
        from ..._core.aliasing import note_detach   # later writes to either reach the other
        note_detach(x, obj)
        obj._tape, obj._tidx = x._tape, x._tidx
    return obj


def _operands(args, kwargs):
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, (list, tuple)):
            yield from (b for b in a if isinstance(b, ndarray))
        elif isinstance(a, ndarray):
            yield a


def returns_legacy(fn):
    """`fn` (an nd function) returning NDArrays when an operand is one or none is an array."""
    if getattr(fn, "_returns_legacy", False) or isinstance(fn, type) or not callable(fn):
        return fn
    if fn in _WRAPPED:                  # one wrapper per function: aliases stay the same object
        return _WRAPPED[fn]

    @functools.wraps(fn)
    def call(*args, **kwargs):
        out = fn(*args, **kwargs)
        operands = tuple(_operands(args, kwargs))
        if not operands or any(type(a) is not ndarray for a in operands):
            return _as_class(out, NDArray, operands)
        return out
    call._returns_legacy = True
    _WRAPPED[fn] = call
    return call


_WRAPPED = {}


def _keeps_class(name):
    core = getattr(ndarray, name)

    def method(self, *args, **kwargs):
        if name in _SCALAR_OPS and args:
            args = (_scalar_as(self, args[0]),) + args[1:]
        out = core(self, *args, **kwargs)
        if out is self or any(out is a for a in args):     # x += y, copyto(y): that array
            return out
        return _as_class(out, NDArray)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = core.__doc__
    return method


def _fluent(name, nd_attr):
    def method(self, *args, **kwargs):
        return _as_class(nd_attr(name)(self, *args, **kwargs), NDArray, (self,))
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"`nd.{name}(self, ...)` (MXNet 1.x's fluent method)."
    return method


def _property_keeping_class(name):
    core = getattr(ndarray, name)
    return property(lambda self: _as_class(core.fget(self), NDArray, ()), core.fset,
                    doc=core.__doc__)


def install(nd_attr):
    """Give NDArray its 1.x methods (`nd_attr(name)`: the nd function of that name) and the
    core class `as_nd_ndarray` (called once, by kiln/mx/nd/__init__.py, after the methods of
    kiln/mx/nd/methods.py are on the core class)."""
    for name in _KEEP_CLASS:
        if name not in NDArray.__dict__:
            setattr(NDArray, name, _keeps_class(name))
    for name in FLUENT_1X:
        if name not in NDArray.__dict__:
            setattr(NDArray, name, _fluent(name, nd_attr))
    for name in ("T", "grad"):
        setattr(NDArray, name, _property_keeping_class(name))
    ndarray.as_nd_ndarray = lambda self: share(self, NDArray)


def legacy_module(module):
    """An nd sub-namespace (`nd.random`, `nd.linalg`, ...) whose functions return NDArrays
    as `returns_legacy` says (wrapped once, in place)."""
    if not getattr(module, "_returns_legacy", False):
        for name, value in list(vars(module).items()):
            if not name.startswith("_") and isinstance(value, types.FunctionType):
                setattr(module, name, returns_legacy(value))
        module._returns_legacy = True
    return module
