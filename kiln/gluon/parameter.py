"""Parameter: one named, trainable array of a Block, with deferred (shape-inferred) init.

`data()` always returns the same kiln ndarray object, so writes through it
(`w.data()[:] += 1`) change the parameter. While hybridize traces, `data()` returns the
trace's symbolic stand-in for the parameter instead.

A shape may hold 0 for a dimension that is not known yet (Dense(256) before it has seen
its input). `initialize()` on such a parameter is deferred until the owning layer infers
the shape from its first input.
"""
import os
import warnings

import numpy as _np

from .._core import aligned, autograd
from .._core.base import KilnError, normalize_dtype, where_in_user_code
from .._core.context import Context, cpu, check_usable, placed
from .._core import trace
from .._core.ndarray import ndarray, as_array
from .._core.writes import arrays_written
from .._core.bfloat16 import is_floating
from .parameter_sparse import SparseStorage


class ParameterNotInitializedError(KilnError, RuntimeError):
    """A parameter was used before initialize() (or load_parameters())."""


class DeferredInitializationError(KilnError, RuntimeError):
    """A parameter's shape is not known yet, so it cannot hold data."""


def _shape_text(shape):
    return "None" if shape is None else str(tuple(shape))


def _normalize_shape(shape):
    if shape is None:
        return None
    if isinstance(shape, (int, _np.integer)):
        shape = (shape,)
    # MXNet 2 writes unknown dims as -1; kiln keeps them as 0 (in_units=0 semantics)
    return tuple(0 if d is None or int(d) < 0 else int(d) for d in shape)


def _shape_known(shape):
    return shape is not None and all(d > 0 for d in shape)


def _memory_limit():
    """The bytes this process could ever hold: the machine's memory, or less under an
    address-space limit (None when neither is known)."""
    limits = []
    try:
        limits.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        pass
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY:
            limits.append(soft)
    except (ImportError, ValueError, OSError):
        pass
    return min(limits) if limits else None


class StorageTypeError(KilnError, AssertionError):
    """An unknown storage type for a Parameter (MXNet asserts it: an AssertionError)."""


# Parameter.var() builds an MXNet 1.x Symbol, which lives on the mx floor: it registers the
# builder, a function(Parameter) -> Symbol variable (kiln/mx/sym/__init__.py)
SYMBOL_VARIABLE = [None]


class Parameter(SparseStorage):
    """A named weight of a Block: its shape (dimensions left 0 are inferred on the first call),
    dtype, initializer, gradient request ('write', 'add' or 'null') and learning-rate and
    weight-decay multipliers; `data()` and `grad()` give its arrays."""
    def __init__(self, name="weight", grad_req="write", shape=None, dtype="float32", init=None,
                 allow_deferred_init=True, differentiable=True, lr_mult=1.0, wd_mult=1.0,
                 stype="default", grad_stype="default"):
        self._name = name
        self._shape = _normalize_shape(shape)
        self._dtype = normalize_dtype(dtype)
        self.init = init
        self._allow_deferred_init = allow_deferred_init
        self._differentiable = differentiable
        self._grad_req = grad_req if differentiable else "null"
        for what, value in (("stype", stype), ("grad_stype", grad_stype)):
            if value not in ("default", "row_sparse", "csr"):
                raise StorageTypeError(f"Parameter {name!r}: {what} must be 'default', "
                                       f"'row_sparse' or 'csr', got {value!r}"
                                       f"{where_in_user_code()}")
        if self._grad_req not in ("write", "add", "null"):
            raise KilnError(f"Parameter {name!r}: grad_req must be 'write', 'add' or 'null', "
                            f"got {grad_req!r}{where_in_user_code()}")
        self.lr_mult = lr_mult
        self.wd_mult = wd_mult
        self._stype, self._grad_stype = stype, grad_stype    # MXNet 1.x's sparse storage
        self._trainer = None         # the Trainer made with it (row_sparse_data needs one)
        self._data = None
        self._ctx_list = [cpu()]     # contexts from initialize(ctx=...): all share one copy
        self._deferred = None        # (init, default_init, desc name) waiting for a shape
        self._path = None            # structural name ('0.weight'), learned at initialize()
        self._owner_name = None      # display name of the block that registered it
        self._full_name = None       # MXNet 1.x's name, in a named block (naming.py)

    # ---- description -----------------------------------------------------------------------
    @property
    def name(self):
        return self._full_name or self._name

    def _label(self):
        if self._path:
            return repr(self._path)
        if self._owner_name:
            return f"{self._name!r} of {self._owner_name}"
        return repr(self._name)

    def __repr__(self):
        named = f" {self._full_name}" if self._full_name else ""     # as MXNet 1.x shows it
        return f"Parameter{named} (shape={_shape_text(self._shape)}, dtype={self._dtype.name})"

    @property
    def shape(self):
        return self._shape

    @shape.setter
    def shape(self, new_shape):
        new_shape = _normalize_shape(new_shape)
        old = self._shape
        if old is not None and new_shape is not None:
            ok = len(old) == len(new_shape) and all(
                o == 0 or o == n for o, n in zip(old, new_shape))
            if not ok:
                raise KilnError(f"Parameter {self._label()}: cannot change shape from "
                                f"{_shape_text(old)} to {_shape_text(new_shape)}; only unknown "
                                f"(0) dimensions can be filled in{where_in_user_code()}")
        self._shape = new_shape

    @property
    def dtype(self):
        return self._dtype

    @dtype.setter
    def dtype(self, value):
        self.cast(value)

    @property
    def grad_req(self):
        return self._grad_req

    @grad_req.setter
    def grad_req(self, req):
        if req not in ("write", "add", "null"):
            raise KilnError(f"Parameter {self._label()}: grad_req must be 'write', 'add' or "
                            f"'null', got {req!r}{where_in_user_code()}")
        if not self._differentiable:
            req = "null"
        self._grad_req = req
        if self._data is not None:
            self._attach_grad(self._data)

    def _attach_grad(self, arr):
        arr.attach_grad(self._array_grad_req(), stype=self._grad_stype)

    def _array_grad_req(self):
        """On several CPU contexts there is one shared copy; its gradient adds up the
        backward of every shard, which is the sum MXNet's all-reduce forms from the copies
        (Trainer.step clears it after the update)."""
        return "add" if self._grad_req == "write" and len(self._ctx_list) > 1 else \
            self._grad_req

    @property
    def ctx(self):
        return self._ctx_list[0]

    def list_ctx(self):
        return list(self._ctx_list)

    def reset_ctx(self, ctx=None):
        """Place the parameter on the contexts `ctx` (kiln computes on the CPU: one copy
        serves them all, reporting each context); its gradient starts again from zero, as in
        MXNet."""
        check_usable(ctx, f"Parameter {self._label()}.reset_ctx")
        self._ctx_list = _contexts(ctx)
        if self._data is not None:
            self._attach_grad(self._data)

    reset_device = reset_ctx

    # ---- initialization --------------------------------------------------------------------
    def initialize(self, init=None, ctx=None, default_init=None, force_reinit=False, *,
                   _path=None):
        """Create the data now, or once the shape is known (deferred initialization).

        As in MXNet, `init` (or the parameter's own `init`) wins; otherwise `default_init`
        (the block-level initializer, Uniform() by default) picks by name suffix.
        """
        from .. import init as kinit
        check_usable(ctx, f"Parameter {self._label()}.initialize")
        if _path is not None:
            self._path = _path
        if self._data is not None and not force_reinit:
            warnings.warn(f"Parameter {self._label()} is already initialized, ignoring. "
                          "Set force_reinit=True to re-initialize.", stacklevel=3)
            return False
        self._ctx_list = _contexts(ctx)
        if self._data is not None:  # re-initialized in place: the gradient mode may change
            self._attach_grad(self._data)
        if default_init is None:
            default_init = kinit.Uniform()
        own = init if init is not None else self.init
        if not _shape_known(self._shape):
            if not self._allow_deferred_init:
                raise KilnError(f"Parameter {self._label()} has unknown shape "
                                f"{_shape_text(self._shape)} and deferred initialization is "
                                f"not allowed for it{where_in_user_code()}")
            self._deferred = (own, default_init)
            return True
        self._init_now(own, default_init)
        return True

    def _init_now(self, own, default_init):
        from .. import init as kinit
        self._check_size()
        # Fill a fresh array and copy it in: in-place ops such as `data *= mask` in a
        # custom initializer would otherwise run on the autograd leaf (see _install).
        try:
            fresh = ndarray._wrap(_np.zeros(self._shape, self._dtype))
        except MemoryError:
            raise KilnError(f"Parameter {self._label()}: not enough memory for shape "
                            f"{_shape_text(self._shape)} ({self._dtype.name})"
                            f"{where_in_user_code()}") from None
        desc = kinit.InitDesc(self._path or self._name,
                              {"__init__": own} if own is not None else {})
        with trace.suspended(), autograd.pause():
            kinit.create(default_init)(desc, fresh)
        self._install(fresh._concrete("initialize"))
        self._deferred = None

    def _check_size(self):
        """Refuse, before allocating, a shape this machine cannot hold (a size argument
        off by orders of magnitude, such as Dense(1 << 40)): the error names the
        parameter, where NumPy's would name only the bytes."""
        count = 1
        for d in self._shape:
            count *= d          # Python integers: no overflow
        nbytes = count * self._dtype.itemsize
        limit = _memory_limit()
        if limit is not None and nbytes > limit:
            raise KilnError(f"Parameter {self._label()} of shape {_shape_text(self._shape)} "
                            f"({self._dtype.name}) needs {nbytes} bytes, more than this "
                            f"machine's memory ({limit} bytes); check the layer's size "
                            f"arguments (units, channels, in_units){where_in_user_code()}")

    def _install(self, value):
        """Put `value` (NumPy) in the parameter, keeping the array object if there is one."""
        value = _np.asarray(value)
        try:
            if self._data is not None and self._data.shape == value.shape \
                    and self._data.dtype == self._dtype:
                with autograd.pause():
                    self._data[...] = ndarray._wrap(value.astype(self._dtype, copy=False))
                return
            arr = ndarray._wrap(aligned.copy_of(value, self._dtype))
            if self._stype != "default":
                arr = arr.tostype(self._stype)
            self._attach_grad(arr)
            self._data = arr
        finally:
            arrays_written()

    def _finish_deferred_init(self):
        if self._deferred is None or self._data is not None:
            return
        if not _shape_known(self._shape):
            raise DeferredInitializationError(
                f"Parameter {self._label()} cannot be initialized yet: its shape "
                f"{_shape_text(self._shape)} has unknown (0) dimensions, which are inferred "
                f"from the first input. Run the network once (net(X)) before using the "
                f"parameter, or give the full shape (e.g. in_units=...).{where_in_user_code()}")
        own, default_init = self._deferred
        self._init_now(own, default_init)

    @property
    def _is_pending(self):
        """initialize() was called but the data waits for the shape."""
        return self._data is None and self._deferred is not None

    def _check_initialized(self):
        if self._data is not None:
            return
        if self._deferred is not None:
            self._finish_deferred_init()
            return
        raise ParameterNotInitializedError(
            f"Parameter {self._label()} (shape {_shape_text(self._shape)}) has not been "
            f"initialized. Call initialize() on the network (net.initialize()) or load "
            f"parameters (net.load_parameters(path)) before using it.{where_in_user_code()}")

    # ---- data and gradients ----------------------------------------------------------------
    def data(self, ctx=None):
        if self._stype != "default":
            raise RuntimeError(f"Cannot return a copy of Parameter '{self.name}' on ctx {ctx} "
                               f"via data() because its storage type is {self._stype}. Please "
                               f"use row_sparse_data() instead.")
        return self._array(ctx)

    def _array(self, ctx=None):
        """The parameter's array, whatever its storage (what data() gives a dense one), as
        it reports itself on `ctx`."""
        tc = trace.current()
        if tc is not None:
            if self._data is None:
                with trace.suspended():
                    self._check_initialized()
            return tc.param_array(self, self._data)
        self._check_initialized()
        return _on(self._data, ctx)

    def list_data(self):
        if self._stype != "default":
            raise RuntimeError(f"Cannot return copies of Parameter '{self.name}' on all "
                               f"contexts via list_data() because its storage type is "
                               f"{self._stype}. Please use row_sparse_data() instead.")
        return [self.data(c) for c in self._ctx_list]

    def _reduce(self):
        """MXNet's copy of the value on the CPU, averaged over the contexts (scripts that
        save a model call it); kiln keeps one value for every context: a copy of it."""
        return self.data().copy()

    def grad(self, ctx=None):
        tc = trace.current()
        if tc is not None:
            return self._traced_grad(tc)
        self._check_initialized()
        if self._grad_req == "null" or self._data.grad is None:
            raise KilnError(f"Parameter {self._label()} has no gradient because its grad_req "
                            f"is 'null'{where_in_user_code()}")
        return _on(self._data.grad, ctx)

    def _traced_grad(self, tc):
        """Inside a trace: the gradient a traced backward() left on this parameter's symbol."""
        from .. import np as knp
        if self._grad_req == "null":
            raise KilnError(f"Parameter {self._label()} has no gradient because its grad_req "
                            f"is 'null'{where_in_user_code()}")
        sym = self._array()
        g = sym._grad
        return g if g is not None else knp.zeros(sym.shape, dtype=sym.dtype)

    def list_grad(self):
        return [self.grad(c) for c in self._ctx_list]

    @property
    def _grad(self):
        """MXNet 1.x's attribute: the gradient buffers, one per context, or None (not
        initialized, or grad_req 'null')."""
        if self._data is None or self._grad_req == "null" or self._data.grad is None:
            return None
        return [self._data.grad] * len(self._ctx_list)

    def zero_grad(self):
        if self._data is not None and self._data.grad is not None:
            g = self._data.grad
            if g.stype != "default":
                g[:] = 0                # a sparse gradient: its own write (no rows stored)
            elif g._node is None:
                g._data[...] = 0
            else:
                self._data.grad = ndarray._wrap(_np.zeros(self._shape, self._dtype))

    def set_data(self, data):
        """Copy `data` into the parameter (the array object stays the same)."""
        value = data._concrete("set_data") if isinstance(data, ndarray) else _np.asarray(data)
        self.shape = value.shape
        if self._data is None:
            self._install(value)
            self._deferred = None
            return
        if tuple(value.shape) != self._data.shape:
            raise KilnError(f"Parameter {self._label()}: set_data got shape {value.shape}, "
                            f"expected {self._data.shape}{where_in_user_code()}")
        self._install(value)

    def _load_init(self, value, cast_dtype=False, source=""):
        """Set the parameter from a loaded NumPy array, checking shape and dtype."""
        value = _np.asarray(value)
        if self._shape is not None:
            known = self._shape
            ok = len(known) == value.ndim and all(k == 0 or k == v
                                                  for k, v in zip(known, value.shape))
            if not ok:
                raise KilnError(f"Parameter {self._label()}: the shape {tuple(value.shape)} "
                                f"in {source or 'the file'} does not match the network's "
                                f"shape {_shape_text(known)}{where_in_user_code()}")
        if value.dtype != self._dtype:
            if not cast_dtype and not (is_floating(value.dtype) and is_floating(self._dtype)):
                raise KilnError(f"Parameter {self._label()}: dtype {value.dtype} in "
                                f"{source or 'the file'} differs from the network's "
                                f"{self._dtype}; pass cast_dtype=True to convert"
                                f"{where_in_user_code()}")
            value = value.astype(self._dtype)
        self._shape = tuple(value.shape)
        self._install(value)
        self._deferred = None

    def cast(self, dtype):
        self._dtype = normalize_dtype(dtype)
        if self._data is not None:
            value = self._data._concrete("cast").astype(self._dtype)
            self._data = None
            self._install(value)

    def var(self):
        """The parameter as an MXNet 1.x Symbol variable (with its shape, dtype, storage)."""
        if SYMBOL_VARIABLE[0] is None:
            raise KilnError("Parameter.var() needs kiln.mx (MXNet 1.x symbols); import it"
                            + where_in_user_code())
        if getattr(self, "_var", None) is None:
            self._var = SYMBOL_VARIABLE[0](self)
        return self._var



class Constant(Parameter):
    """A parameter with a fixed value and no gradient (`self.params.get_constant`)."""

    def __init__(self, name, value=None, **kwargs):
        if value is None and "init" in kwargs:
            value = kwargs.pop("init")
        arr = value._concrete("Constant") if isinstance(value, ndarray) else \
            as_array(value)._concrete("Constant")
        self.value = arr
        kwargs.pop("grad_req", None)
        kwargs.setdefault("dtype", arr.dtype)
        super().__init__(name, grad_req="null", shape=arr.shape, **kwargs)

        from .. import init as kinit
        constant_value = arr

        class _ConstantInit(kinit.Initializer):
            def _init_weight(self, _, data):
                data[:] = ndarray._wrap(constant_value)

            _init_default = _init_weight

        self.init = _ConstantInit()

    def initialize(self, init=None, ctx=None, default_init=None, force_reinit=False, *,
                   _path=None):
        # a constant's value is fixed: any initializer passed in is ignored
        return super().initialize(None, ctx, default_init, force_reinit, _path=_path)

    @property
    def grad_req(self):
        return "null"

    @grad_req.setter
    def grad_req(self, req):
        if req != "null":
            warnings.warn(f"Constant {self._label()} has no gradient; ignoring grad_req={req!r}",
                          stacklevel=2)

    def __repr__(self):
        return f"Constant (shape={_shape_text(self._shape)}, dtype={self._dtype.name})"


tensor_types = (ndarray,)

# MXNet's gluon.parameter also holds ParameterDict. It lives in parameter_dict.py, which
# builds on this module; kiln.gluon's __init__ (always run before this module is imported)
# sets it here.


def _contexts(ctx):
    return [Context(c) for c in ctx] if isinstance(ctx, (list, tuple)) and ctx \
        else [Context(ctx) if ctx is not None else cpu()]


def _on(array, ctx):
    """The parameter's one copy as it reports itself on context `ctx`: itself on its own
    context, else the same storage and autograd position reporting `ctx` (MXNet keeps a
    copy per context; on kiln every context is the same host memory)."""
    if ctx is None or Context(ctx) == array.context:
        return array
    return placed(array._alias(), ctx)
