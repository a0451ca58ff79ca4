"""MXNet 1.x's NDArray methods, put onto kiln's one array class from the mx floor.

Most 1.x methods are "fluent" forms of nd functions: `x.slice(begin, end)` is
`nd.slice(x, begin, end)`, `x.take(i)` is `nd.take(x, i)`, and so on (FLUENT). They are added
only where the class has no method of that name, so the NumPy-style methods of the core stay
as they are. Where a core method has extra 1.x arguments, the 1.x form is taken when the
call can only mean it: `reshape` with MXNet's special codes (-2, -3, -4, 0 of a non-empty
array, which NumPy refuses) or `reverse=`, and `flatten/squeeze/expand_dims(inplace=...)`
(inplace=True: a view, as now; inplace=False: a copy, as MXNet makes one), and the
reductions with `exclude=True`.
"""
import numpy as _np

from ..._core.base import KilnError, where_in_user_code
from ..._core.ndarray import ndarray
from ..f_namespace import namespace_attr
from ..ops.tensor import mx_reshape_target

# nd functions that MXNet 1.x's NDArray also has as methods (python/mxnet/ndarray/ndarray.py)
FLUENT = tuple("""
    arccos arccosh arcsin arcsinh arctan arctanh argmax_channel broadcast_axes broadcast_like
    cbrt ceil cosh degrees depth_to_space diag expm1 fix flip floor log10 log1p log2
    log_softmax nanprod nansum one_hot pad pick radians rcbrt reciprocal relu reshape_like
    rint rsqrt shape_array sigmoid sinh size_array slice slice_axis slice_like softmax softmin
    space_to_depth split split_v2 take tan topk trunc to_dlpack_for_read to_dlpack_for_write
    """.split())


def _nd(name):
    return namespace_attr("kiln.mx.nd", name)


def _fluent(name):
    def method(self, *args, **kwargs):
        return _nd(name)(self, *args, **kwargs)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"`nd.{name}(self, ...)` (MXNet 1.x's fluent method)."
    return method


def _with_inplace(name, core, as_view):
    """The core method, or with `inplace=` MXNet's: a view (True) or a copy (False)."""
    def method(self, *args, inplace=None, **kwargs):
        if inplace is None:
            return core(self, *args, **kwargs)
        view = as_view(self, *args, **kwargs)
        return view if inplace else view.copy()
    method.__name__ = method.__qualname__ = name
    method.__doc__ = (f"{core.__doc__ or name}\n\nMXNet 1.x's `inplace=True` returns a view, "
                      f"`inplace=False` a copy.")
    return method


def _mx_codes(shape, size):
    """Whether a reshape target can only be MXNet's (NumPy refuses its special values)."""
    return any(d < -1 for d in shape) or (size > 0 and 0 in shape)


def _reshape(core):
    def reshape(self, *shape, reverse=False, **kwargs):
        target = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        if not target and "shape" in kwargs:
            target = kwargs.pop("shape")
        target = (target,) if isinstance(target, int) else tuple(target)
        if reverse or (all(isinstance(d, int) for d in target)
                       and _mx_codes(target, self.size)):
            return core(self, mx_reshape_target(self.shape, target, reverse), **kwargs)
        return core(self, target, **kwargs)
    reshape.__doc__ = ("The array in a new shape (a view). Also MXNet 1.x's special values: "
                       "0 copies an axis, -2 copies the rest, -3 merges two axes, -4 splits "
                       "one; `reverse=True` reads them from the right.")
    return reshape


def _norm(core):
    def norm(self, ord=None, axis=None, keepdims=False, **kwargs):
        # NumPy's matrix norms of ord 1 and 2 (which kiln's core refuses) never mean MXNet
        # 1.x's x.norm(ord=1|2): the L1/L2 norm of the elements over the axes
        if kwargs or ord in (1, 2) and self.ndim >= 2 and (axis is None or
                                                           isinstance(axis, tuple)):
            return _nd("norm")(self, ord=ord, axis=axis, keepdims=keepdims, **kwargs)
        return core(self, ord, axis, keepdims)
    norm.__doc__ = (f"{core.__doc__ or 'The norm.'}\n\nWith ord 1 or 2 over all axes (or "
                    "a tuple of them), MXNet 1.x's elementwise L1/L2 norm.")
    return norm


def _getstate(self):
    """MXNet's pickled state: {'handle': the array's record in MXNet's binary format}."""
    from ...export.mxnet_params import encode_record
    return {"handle": bytearray(encode_record(self._concrete("__getstate__")))}


def _setstate(self, state):
    """This array becomes the one of MXNet's pickled state (any device's: kiln's cpu)."""
    from ...export.mxnet_params import parse_record
    handle = state.get("handle") if isinstance(state, dict) else None
    if not isinstance(handle, (bytes, bytearray)):
        raise KilnError("NDArray.__setstate__: expected {'handle': bytes of an MXNet array "
                        f"record}}, got {type(state).__name__}" + where_in_user_code())
    self._rebind(ndarray._wrap(parse_record(handle, "NDArray state")))


def _basic_indexing_slice_is_contiguous(slc_key, shape):
    """Whether basic slicing with `slc_key` (one slice per axis) gives a C-contiguous array
    (MXNet's helper): read from NumPy's flags on a strided view of one byte, so nothing of
    the shape's size is allocated."""
    strides = _np.cumprod((1,) + tuple(shape[:0:-1]))[::-1] if shape else ()
    template = _np.lib.stride_tricks.as_strided(_np.zeros(1, _np.int8), tuple(shape),
                                                tuple(int(s) for s in strides))
    return bool(template[tuple(slc_key)].flags.c_contiguous)


def _with_exclude(name, core):
    """The core reduction, or with MXNet 1.x's `exclude=True` nd's: over every axis but
    the given ones."""
    def method(self, *args, exclude=False, **kwargs):
        if exclude:
            return _nd(name)(self, *args, exclude=True, **kwargs)
        return core(self, *args, **kwargs)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"{core.__doc__ or name}\n\nMXNet 1.x's `exclude=True` reduces the other axes."
    return method


def _flatten_2d(x):
    return x.reshape((x.shape[0] if x.ndim else 1, -1))


def install():
    """Put the 1.x methods on the array class (called once, by kiln/mx/nd/__init__.py)."""
    for name in FLUENT:
        if not hasattr(ndarray, name):
            setattr(ndarray, name, _fluent(name))
    core = {name: getattr(ndarray, name) for name in ("reshape", "flatten", "squeeze",
                                                      "expand_dims")}
    ndarray.reshape = _reshape(core["reshape"])
    ndarray.norm = _norm(ndarray.norm)
    for name in ("sum", "mean", "max", "min", "prod"):
        setattr(ndarray, name, _with_exclude(name, getattr(ndarray, name)))
    ndarray.__getstate__, ndarray.__setstate__ = _getstate, _setstate
    ndarray._basic_indexing_slice_is_contiguous = staticmethod(
        _basic_indexing_slice_is_contiguous)
    ndarray.flatten = _with_inplace("flatten", core["flatten"],
                                    lambda x: _flatten_2d(x))
    ndarray.squeeze = _with_inplace("squeeze", core["squeeze"],
                                    lambda x, axis=None: core["squeeze"](x, axis))
    ndarray.expand_dims = _with_inplace("expand_dims", core["expand_dims"],
                                        lambda x, axis: core["expand_dims"](x, axis))
