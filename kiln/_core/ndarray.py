"""kiln's one array type.

An ndarray holds either a concrete NumPy value (`_data`, eager mode) or a graph node
(`_node`, while hybridize traces). User code cannot tell the two apart until it asks for a
concrete value, which a symbolic array refuses with an error that names the user's line.
"""
import importlib
import math

import numpy as _np

from .base import (DEFAULT_FLOAT, KilnError, DTypeError, SymbolicValueError,
    UnsupportedError, where_in_user_code, normalize_dtype)
from . import aligned
from .bfloat16 import is_bfloat16
from .context import check_usable, placed, Placement
from .primitive import REGISTRY
from .writes import arrays_written
from . import alias_paths

from .methods import NumpyMethods, _np_api

_LATE = {}

# storage type -> function(dense ndarray) -> sparse array; kiln/mx/nd/sparse registers
# 'csr' and 'row_sparse' at import (MXNet 1.x's sparse storage lives on the mx floor)
SPARSE_STORAGE = {}


def _late(name):
    """A kiln module that imports this one, imported on first use: an import statement in
    a method costs about a microsecond on every call, and these run on every op."""
    module = _LATE.get(name)
    if module is None:
        module = _LATE[name] = importlib.import_module(f"{__package__}.{name}")
    return module


class ndarray(NumpyMethods, Placement):
    """kiln's array (MXNet's `np.ndarray`): NumPy values with NumPy's methods and operators,
    float32 by default, recorded on the autograd tape inside `autograd.record()` and traced into
    a graph inside hybridized code. `attach_grad()`, `.grad`, `backward()`, `asnumpy()`."""
    __slots__ = ("_data", "_node", "_tape", "_tidx", "_grad", "_grad_req", "_view",
                 "__weakref__")
    __array_priority__ = 100.0

    def __init__(self, data=None, node=None):
        self._data = data
        self._node = node
        self._tape = None
        self._tidx = 0
        self._grad = None
        self._grad_req = None
        self._view = None

    # ---- construction helpers --------------------------------------------------------------
    # every slot but _data of an eager array just made; the C dispatcher (fastcall.py)
    # makes its result arrays from this, _wrap spells it out for speed
    _FRESH = (("_node", None), ("_tape", None), ("_tidx", 0), ("_grad", None),
              ("_grad_req", None), ("_view", None))

    @classmethod
    def _wrap(cls, data):
        obj = cls.__new__(cls)
        obj._data = data
        obj._node = None
        obj._tape = None
        obj._tidx = 0
        obj._grad = None
        obj._grad_req = None
        obj._view = None      # aliasing.py: what this array is a view of, and its views
        return obj

    @classmethod
    def _from_node(cls, node):
        obj = cls._wrap(None)
        obj._node = node
        return obj

    @staticmethod
    def _alias_of(src, tape, tidx):
        obj = ndarray._wrap(src._data)
        obj._node = src._node
        obj._tape, obj._tidx = (src._tape, src._tidx) if tape is None else (tape, tidx)
        return obj

    def _alias(self):
        """A new object with the same value and tape position (immune to later rebinding)."""
        return ndarray._alias_of(self, None, 0)

    def _rebind(self, other):
        """Make this object hold `other`'s value: in-place ops on tracked or symbolic arrays
        (through the array it is a view of, and into its views: aliasing.py)."""
        alias_paths.check_write(self)
        if self._view is not None:
            from .aliasing import write
            write(self, other)
        else:
            self._data, self._node = other._data, other._node
            self._tape, self._tidx = other._tape, other._tidx
        alias_paths.after_write(self)   # arrays that are this one on some paths (if/while)
        arrays_written()

    # ---- basic properties ------------------------------------------------------------------
    @property
    def _value(self):
        return self._node if self._node is not None else self._data

    # shape, dtype and ndim are read on every op: no detour through _value
    @property
    def shape(self):
        return self._data.shape if self._node is None else self._node.shape

    @property
    def dtype(self):
        return self._data.dtype if self._node is None else self._node.dtype

    @property
    def ndim(self):
        return self._data.ndim if self._node is None else self._node.ndim

    @property
    def size(self):
        n = 1
        for d in self._value.shape:
            n *= d
        return n

    @property
    def stype(self):
        """Storage type, as in MXNet 1.x: 'default' (dense) for every ndarray; MXNet's sparse
        arrays (kiln.mx.nd.sparse) say 'csr' or 'row_sparse'."""
        return "default"

    def tostype(self, stype):
        """This array in storage `stype`: itself for 'default', else a sparse copy
        ('csr' for 2-D arrays, 'row_sparse')."""
        if stype == "default":
            return self
        convert = SPARSE_STORAGE.get(stype)
        if convert is None:
            raise KilnError(f"tostype: expected stype 'default', 'csr' or 'row_sparse', got "
                            f"{stype!r}{where_in_user_code()}")
        return convert(self)

    @property
    def T(self):
        return self.transpose()

    @property
    def is_symbolic(self):
        return self._node is not None

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    # ---- concrete values -------------------------------------------------------------------
    def _concrete(self, what):
        if self._node is not None:
            raise SymbolicValueError(
                f"{what} needs a concrete value, but this array is a symbol while hybridize "
                f"traces the model ({self._node.describe()}).{where_in_user_code()}\n"
                "Compiled code cannot look at values. Compute with array ops instead "
                "(e.g. np.where(cond, a, b) in place of `if`), move this code out of the "
                "hybridized block, or let kiln convert the control flow (see kiln.explain).")
        return self._data

    def asnumpy(self):
        return _np.array(self._concrete("asnumpy()"), copy=True)

    def __array__(self, dtype=None, copy=None):
        # read-only: a write through NumPy would go past kiln's count of writes (writes.py)
        data = self._concrete("__array__")
        if dtype is not None and data.dtype != dtype:
            if copy is False:
                raise ValueError(f"a {data.dtype} kiln array cannot be viewed as {dtype} "
                                 "without a copy (copy=False)")
            return data.astype(dtype)
        if copy:
            return data.copy()
        view = data.view()
        view.flags.writeable = False
        return view

    def item(self, *args):
        data = self._concrete("item()")
        if not args and data.size != 1:
            raise KilnError(f"item(): expected an array of size 1, got shape {data.shape}"
                            f"{where_in_user_code()}")
        return data.item(*args)

    def tolist(self):
        return self._concrete("tolist()").tolist()

    def _scalar(self, what):
        data = self._concrete(what)
        if data.size != 1:
            raise KilnError(f"{what}: only arrays of size 1 convert to a Python scalar, got "
                            f"shape {data.shape}{where_in_user_code()}")
        return data.reshape(()).item()

    def __float__(self):
        return float(self._scalar("float()"))

    def __int__(self):
        return int(self._scalar("int()"))

    def __index__(self):
        if self.dtype.kind not in "iub":
            raise TypeError("only integer arrays can be used as an index")
        return int(self._scalar("index"))

    def __bool__(self):
        data = self._concrete("bool()")
        if data.size > 1:
            raise ValueError(f"The truth value of an array with more than one element is "
                             f"ambiguous (shape {data.shape}){where_in_user_code()}")
        return data.size == 1 and bool(data.reshape(-1)[0])   # empty: False, as in MXNet

    def __complex__(self):
        return complex(self._scalar("complex()"))

    def __repr__(self):
        if self._node is not None:
            return repr(self._node.symbol())
        # MXNet's format: dtype hidden for float32 (and bool), shown for everything else
        text = repr(self._data)
        dtype = self._data.dtype
        if "dtype=" in text:
            if dtype == DEFAULT_FLOAT:
                text = text[:text.rindex(",")] + ")"
        elif dtype not in (DEFAULT_FLOAT, _np.bool_):
            text = text[:-1] + f", dtype={dtype})"
        return text

    def __str__(self):
        if self._node is not None:
            return repr(self)
        return str(self._data)

    def __format__(self, spec):
        if self._node is None and self._data.ndim == 0:
            return format(self._data.item(), spec)
        if spec:        # as NumPy: a format spec applies to scalars only
            raise TypeError(f"unsupported format string {spec!r} passed to an array of shape "
                            f"{tuple(self.shape)}")
        return str(self)

    def __iter__(self):
        # raised by iter() itself, as NumPy does: np.iterable(x) must say False
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __hash__(self):
        return id(self)

    def __reduce__(self):
        # plain data (dtype name, shape, bytes) only `from_pickled` rebuilds; kiln's own
        # loaders (npx.load, nd.load, load_parameters) still never unpickle a file
        value = self._concrete("pickle")
        return (from_pickled, (str(value.dtype), tuple(value.shape),
                               _np.ascontiguousarray(value).tobytes()))

    def __deepcopy__(self, memo):
        return self.copy()

    def __copy__(self):
        return self.copy()

    # ---- autograd --------------------------------------------------------------------------
    def attach_grad(self, grad_req="write", stype=None):
        """Give this array a gradient buffer, zero, of storage `stype` (MXNet 1.x: 'default',
        'row_sparse' or 'csr'; by default this array's own storage)."""
        from .autograd import Leaf
        if grad_req not in ("write", "add", "null"):
            raise KilnError(f"attach_grad: grad_req must be 'write', 'add' or 'null', got "
                            f"{grad_req!r}{where_in_user_code()}")
        self._grad_req = grad_req
        if grad_req == "null":
            self._tape, self._grad = None, None
            return
        self._grad = ndarray._wrap(aligned.zeros(self.shape, self.dtype))
        if (stype or self.stype) != "default":
            self._grad = self._grad.tostype(stype or self.stype)
        self._tape, self._tidx = Leaf(self), 0

    @property
    def grad(self):
        return self._grad

    @grad.setter
    def grad(self, value):
        self._grad = value

    def _store_grad(self, g, create_graph):
        if self._grad_req in (None, "null"):
            return
        if create_graph or g._node is not None or self._grad is None:
            self._grad = g if self._grad_req == "write" or self._grad is None else self._grad + g
            return
        if self._grad.stype != "default" or g.stype != "default":
            # a sparse gradient buffer (MXNet 1.x) takes the gradient in its own storage
            (g if self._grad_req == "write" else self._grad + g).copyto(self._grad)
            return
        value = g._data
        if value.shape != self.shape:
            value = _np.broadcast_to(value, self.shape)
        if self._grad_req == "add":
            self._grad._data += value
        else:
            self._grad._data[...] = value

    def backward(self, out_grad=None, retain_graph=False, train_mode=True, create_graph=False):
        from . import autograd
        autograd.backward(self, out_grad, retain_graph=retain_graph, train_mode=train_mode,
                          create_graph=create_graph)

    def detach(self):
        obj = ndarray._wrap(self._data)
        obj._node = self._node
        if (self._node is not None or self._view is not None or self._tape is not None
                or _links_views()):
            from .aliasing import note_detach     # shares memory when traced too
            note_detach(self, obj)
        return obj

    # ---- devices (CPU memory only; the context an array was given: context.Placement) ------
    def copyto(self, other):
        if isinstance(other, ndarray):
            other[...] = self
            return other
        if getattr(other, "stype", None) in SPARSE_STORAGE:    # a sparse array takes it in
            other._assign(self.tostype(other.stype))           # its own storage type
            return other
        check_usable(other, "copyto")
        return placed(self.copy(), other)

    def as_np_ndarray(self):
        return self

    as_nd_ndarray = as_np_ndarray

    def asscalar(self):
        """MXNet 1.x's NDArray.asscalar(): a size-1 array's value as a NumPy scalar."""
        data = self._concrete("asscalar()")
        if data.size != 1:
            raise KilnError(f"asscalar(): expected an array of size 1, got shape {data.shape}"
                            f"{where_in_user_code()}")
        return data.reshape(-1)[0]

    def wait_to_read(self):
        return None

    wait_to_write = wait_to_read

    # ---- indexing --------------------------------------------------------------------------
    def __getitem__(self, key):
        return _late("indexing").getitem(self, key)

    def __setitem__(self, key, value):
        from .indexing import setitem
        setitem(self, key, value)

    # ---- arithmetic ------------------------------------------------------------------------
    def _binary(self, name, other, reverse=False):
        binary = _late("dispatch").binary
        return binary(name, other, self) if reverse else binary(name, self, other)

    def __add__(self, o): return self._binary("add", o)
    def __radd__(self, o): return self._binary("add", o, True)
    def __sub__(self, o): return self._binary("subtract", o)
    def __rsub__(self, o): return self._binary("subtract", o, True)
    def __mul__(self, o): return self._binary("multiply", o)
    def __rmul__(self, o): return self._binary("multiply", o, True)
    def __truediv__(self, o): return self._binary("divide", o)
    def __rtruediv__(self, o): return self._binary("divide", o, True)
    def __mod__(self, o): return self._binary("mod", o)
    def __rmod__(self, o): return self._binary("mod", o, True)
    def __pow__(self, o): return self._binary("power", o)
    def __rpow__(self, o): return self._binary("power", o, True)
    def __eq__(self, o): return self._binary("equal", o)
    def __ne__(self, o): return self._binary("not_equal", o)
    def __lt__(self, o): return self._binary("less", o)
    def __le__(self, o): return self._binary("less_equal", o)
    def __gt__(self, o): return self._binary("greater", o)
    def __ge__(self, o): return self._binary("greater_equal", o)
    def __and__(self, o): return self._binary("logical_and", o)
    def __or__(self, o): return self._binary("logical_or", o)
    def __xor__(self, o): return self._binary("logical_xor", o)

    def __floordiv__(self, o):
        return _np_api().floor_divide(self, o)

    def __rfloordiv__(self, o):
        return _np_api().floor_divide(o, self)

    def __matmul__(self, o):
        return _np_api().matmul(self, o)

    def __rmatmul__(self, o):
        return _np_api().matmul(o, self)

    def __neg__(self):
        return REGISTRY["negative"](self)

    def __pos__(self):
        return self

    def __abs__(self):
        return _np_api().abs(self)

    def __invert__(self):
        if self.dtype != _np.bool_:
            raise DTypeError(f"~ is supported on bool arrays only, got {self.dtype}"
                             f"{where_in_user_code()}")
        return REGISTRY["logical_not"](self)

    # in-place operators keep the object's identity (X += Y, as d2l shows with id())
    def _inplace(self, name, other):
        _late("dispatch").inplace_binary(name, self, other)
        return self

    def __iadd__(self, o): return self._inplace("add", o)
    def __isub__(self, o): return self._inplace("subtract", o)
    def __imul__(self, o): return self._inplace("multiply", o)
    def __itruediv__(self, o): return self._inplace("divide", o)
    def __imod__(self, o): return self._inplace("mod", o)
    def __ipow__(self, o): return self._inplace("power", o)

    def astype(self, dtype, copy=True):
        dt = normalize_dtype(dtype)
        if dt == self.dtype and not copy:
            return self
        return REGISTRY["cast"](self, dtype=dt)

    def copy(self, order="C"):
        if order != "C":
            raise UnsupportedError(f"copy: kiln arrays are C-ordered; expected order='C', got "
                                   f"{order!r}{where_in_user_code()}")
        if self._node is not None:
            # a new object, no view link: a later write to either is not seen by the other
            return self._alias()
        from .dispatch import apply_identity
        return apply_identity(self)



def from_pickled(dtype, shape, data):
    """An array from what ndarray.__reduce__ pickles, checked before it is used: a plain
    dtype (no Python objects), a shape of non-negative ints, and exactly its bytes."""
    dt = normalize_dtype(dtype)
    shape = tuple(shape)
    if dt.hasobject or not all(isinstance(d, int) and d >= 0 for d in shape) or \
            not isinstance(data, bytes) or len(data) != math.prod(shape) * dt.itemsize:
        got = f"{len(data)} bytes" if isinstance(data, bytes) else type(data).__name__
        raise KilnError(f"unpickling an array: expected a plain dtype, a shape and its bytes, "
                        f"got dtype {dtype!r}, shape {shape!r}, {got}")
    return ndarray._wrap(_np.frombuffer(data, dtype=dt).reshape(shape).copy())


def full_like(x, value):
    """A constant array shaped like `x` (a graph node when `x` is symbolic)."""
    return REGISTRY["full"](shape=tuple(x.shape), value=value, dtype=x.dtype)


def as_array(value, dtype=None):
    """Convert any array-like to an eager ndarray.

    As in MXNet, NumPy arrays keep their dtype and everything else (lists, scalars) becomes
    float32 unless a dtype is given; lists of bools stay bool.
    """
    if isinstance(value, ndarray):
        return value if dtype is None or value.dtype == dtype else value.astype(dtype)
    if isinstance(value, _np.ndarray):
        data = value if dtype is None else value.astype(dtype)
    else:
        data = _np.array(value)
        if dtype is not None:
            data = data.astype(dtype, copy=False)
        elif data.dtype.kind in "iuf" or data.dtype == object:
            data = data.astype(DEFAULT_FLOAT)
    if data.dtype.kind not in "fiub" and not is_bfloat16(data.dtype):
        raise DTypeError(f"cannot make an array of dtype {data.dtype}{where_in_user_code()}")
    return ndarray._wrap(data)


def _links_views():
    """Under record() or a trace an in-place write may rebind its target instead of writing
    its buffer (dispatch.inplace_binary), so a view must be linked to see the write, as a
    slice is (dispatch.apply: VIEW_OPS)."""
    from . import autograd
    from . import trace
    return autograd._state.recording or trace.current() is not None
