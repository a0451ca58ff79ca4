"""Block and HybridBlock: the building units of a Gluon model.

Children and parameters register themselves when assigned as attributes, in order. Their
structural names (the attribute or child keys joined by '.') are the keys of
collect_params() and of saved parameter files, so the same architecture built twice gives
the same names: no global counters are involved. `block.name` ('dense0') is for display only.
"""
import itertools
import re
import threading
import warnings
import weakref
from collections import OrderedDict

from .._core.base import KilnError, where_in_user_code
from .._core import trace
from ..backend.c import fastcall
from ..hybrid.cached import MISS, shape_policy_of
from ..hybrid.precision import note_precision_in_trace
from . import f_namespace, naming
from .hybrid_inputs import (DirectForward, _OP_HOOK_RUN, _SYMBOL_CALL,
                            _check_hybrid_forward_inputs, _kinds_of)
from .parameter import Parameter, _shape_known
from .parameter_dict import ParameterDict

_display_counters = {}
_display_lock = threading.Lock()
# parameters whose shape waits for the first input are initialized once, under this lock,
# when several threads make that first call at once (each would draw its own weights)
_deferred_init_lock = threading.RLock()


def _display_name(cls):
    base = cls.__name__.lower()
    with _display_lock:
        n = _display_counters.get(base, 0)
        _display_counters[base] = n + 1
    return f"{base}{n}"


def _deref(child):
    # MXNet 2 keeps weak references in _children; accept both that and plain blocks
    return child() if isinstance(child, weakref.ref) else child


def _indent(text, spaces=2):
    lines = text.split("\n")
    return "\n".join([lines[0]] + [" " * spaces + line for line in lines[1:]])


def _forward(block, method, args, kwargs):
    """Call block.<method>; while hybridize traces, the version whose array-dependent
    control flow became graph ops (kiln/graph/convert.py)."""
    fn = getattr(block, method)
    fn = getattr(fn, "_kiln_forward_of", fn)     # the user's forward, not DirectForward's
    if trace.current() is not None:
        from ..graph.convert import convert
        fn = convert(fn)
    return fn(*args, **kwargs)


class HookHandle:
    """Returned by register_forward_hook; detach() removes the hook."""

    _ids = itertools.count(1)      # next() is atomic: threads adding hooks get distinct ids

    def __init__(self, hooks):
        self._hooks = weakref.ref(hooks) if not isinstance(hooks, dict) else (lambda: hooks)
        self.id = next(HookHandle._ids)

    def detach(self):
        hooks = self._hooks()
        if hooks is not None:
            hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.detach()


class Block:
    """The base class of layers and models (MXNet's Gluon Block): it holds child blocks and
    Parameters, and its `forward` says what it computes. `collect_params`, `initialize`,
    `save_parameters`/`load_parameters` and forward hooks act on the whole tree of blocks."""
    def __init__(self, prefix=None, params=None, **kwargs):
        # `prefix` or a parent's name_scope() give MXNet 1.x names (naming.py); otherwise
        # names are structural. `params` (MXNet 1.x sharing): parameters registered later
        # under the same names are taken from it instead of being created.
        if kwargs:
            raise TypeError(f"{type(self).__name__}() got unexpected keyword argument(s) "
                            f"{', '.join(sorted(kwargs))}{where_in_user_code()}")
        prefix, params_prefix, shared, named = naming.assign_prefix(
            type(self), prefix, params, self.__dict__.get("_mx_alias"))
        display = naming.display_name(prefix) if named else _display_name(type(self))
        object.__setattr__(self, "_prefix", prefix if named else display + "_")
        object.__setattr__(self, "_params_prefix", params_prefix if named else display + "_")
        object.__setattr__(self, "_mx1_names", named)
        object.__setattr__(self, "_scope_counter", {})
        object.__setattr__(self, "_children", OrderedDict())
        object.__setattr__(self, "_reg_params", ParameterDict(owner=self, shared=shared))
        object.__setattr__(self, "_name", display)
        object.__setattr__(self, "_forward_hooks", OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks", OrderedDict())
        object.__setattr__(self, "_hybrid_active", False)
        object.__setattr__(self, "_hybrid_opts", {})

    # ---- registration ----------------------------------------------------------------------
    def _require_init(self, what):
        if "_children" not in self.__dict__:
            raise KilnError(f"{type(self).__name__}: assigning {what} before "
                            f"super().__init__() was called; call it first in __init__"
                            f"{where_in_user_code()}")

    def __setattr__(self, name, value):
        existing = self.__dict__.get(name)
        if isinstance(existing, (Parameter, Block)) and value is not None and \
                not isinstance(value, type(existing)):
            # MXNet refuses this too: the block's structure would change silently (kiln lets
            # None through, which removes the child or parameter)
            raise TypeError(f"{type(self).__name__}: changing attribute {name!r} from "
                            f"{type(existing).__name__} to {type(value).__name__} is not "
                            f"allowed{where_in_user_code()}")
        if isinstance(value, Block):
            self._require_init(f"block {name!r}")
            self._children[name] = value
            self._drop_compiled()
        elif isinstance(value, Parameter):
            self._require_init(f"parameter {name!r}")
            value = self._register_param(name, value)
        elif "_children" in self.__dict__:
            # an attribute that held a child or parameter now holds something else
            if name in self._children and _deref(self._children[name]) is self.__dict__.get(name):
                del self._children[name]
            if name in self._reg_params and self._reg_params[name] is self.__dict__.get(name):
                del self._reg_params[name]
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        self._children.pop(name, None)
        self._reg_params.pop(name, None)
        object.__delattr__(self, name)

    def _register_param(self, name, param):
        shared = self._reg_params._shared
        # params=other.params: use the other block's one (by MXNet 1.x's name when named)
        shared_key = naming.full_name(self, name) if self._mx1_names else name
        if shared is not None and shared_key in shared and shared[shared_key] is not param:
            param = shared[shared_key]
        for existing in self._reg_params.values():
            if existing is param:
                return param              # params.get('w') then self.w = ...: one entry
        if param._owner_name is None:
            param._owner_name = self._name
            if self._mx1_names:
                param._full_name = naming.full_name(self, name)
        OrderedDict.__setitem__(self._reg_params, name, param)
        return param

    def register_child(self, block, name=None):
        if name is None:
            name = str(len(self._children))
        self._children[name] = block
        self._drop_compiled()
        return block

    def _drop_compiled(self):
        """The children changed: programs hybridize compiled for the old ones are stale."""
        self.__dict__.pop("_kiln_cached", None)

    def _replace_param(self, key, new):
        old = self._reg_params[key]
        OrderedDict.__setitem__(self._reg_params, key, new)
        for attr, value in list(self.__dict__.items()):
            if value is old:
                object.__setattr__(self, attr, new)

    # ---- names and parameters --------------------------------------------------------------
    @property
    def name(self):
        return self._name

    @property
    def prefix(self):
        """MXNet 1.x's prefix of a named block (naming.py); '' when names are structural."""
        return self._prefix if self._mx1_names else ""

    @property
    def params(self):
        """This block's own parameters (not its children's)."""
        return self._reg_params

    def name_scope(self):
        """MXNet 1.x's scope: blocks made inside get names under this block's prefix."""
        return naming.name_scope(self)

    def _walk_params(self, prefix=""):
        """(structural name, owning block, local key) for every parameter, children included."""
        for key in self._reg_params:
            yield prefix + key, self, key
        for cname, child in self._children.items():
            yield from _deref(child)._walk_params(f"{prefix}{cname}.")

    def _collect_params_with_prefix(self, prefix=""):
        if prefix and not prefix.endswith("."):
            prefix += "."
        return OrderedDict((name, owner._reg_params[key])
                           for name, owner, key in self._walk_params(prefix))

    def collect_params(self, select=None):
        """Every parameter of this block and its children, by structural name.

        A parameter shared by several layers appears once, under its first name.
        `select` is a regular expression matched at the start of each name ('.*weight').
        """
        self._warn_unregistered_blocks()
        pattern = re.compile(select) if select else None
        out, seen = ParameterDict(prefix=self.prefix), set()
        for name, param in self._collect_params_with_prefix().items():
            name = param._full_name or name          # MXNet 1.x's name in a named block
            if id(param) in seen or (pattern is not None and not pattern.match(name)):
                continue
            seen.add(id(param))
            OrderedDict.__setitem__(out, name, param)
        return out

    def _warn_unregistered_blocks(self):
        """Warn (as MXNet does) about Blocks kept in a list, tuple or dict attribute: they are
        not children, so their parameters are not collected, saved or trained."""
        children = {id(_deref(c)) for c in self._children.values()}

        def holds_block(data):
            if isinstance(data, (list, tuple)):
                return any(holds_block(x) for x in data)
            if isinstance(data, dict):
                return any(holds_block(x) for x in data.values())
            return isinstance(data, Block) and id(data) not in children

        for key, value in self.__dict__.items():
            if isinstance(value, (list, tuple, dict)) and not key.startswith("_") and \
                    holds_block(value):
                warnings.warn(f'"{type(self).__name__}.{key}" is an unregistered container '
                              "with Blocks. Note that Blocks inside the list, tuple or dict "
                              "will not be registered automatically. Make sure to register "
                              "them using register_child() or switching to "
                              "nn.Sequential/nn.HybridSequential instead.", stacklevel=3)
        for child in self._children.values():
            _deref(child)._warn_unregistered_blocks()

    def share_parameters(self, shared):
        """Use the parameters in `shared` (structural name -> Parameter) in place of ours."""
        if shared is None:
            return self
        shared = dict(shared.items())
        for name, owner, key in list(self._walk_params()):
            if name in shared:
                owner._replace_param(key, shared[name])
        return self

    # ---- initialization and state ----------------------------------------------------------
    def initialize(self, init=None, ctx=None, verbose=False, force_reinit=False):
        self.collect_params().initialize(init, ctx, verbose, force_reinit)

    def zero_grad(self):
        self.collect_params().zero_grad()

    def apply(self, fn):
        for child in self._children.values():
            _deref(child).apply(fn)
        fn(self)
        return self

    def cast(self, dtype):
        for child in self._children.values():
            _deref(child).cast(dtype)
        for param in self._reg_params.values():
            param.cast(dtype)

    def reset_ctx(self, ctx):
        self.collect_params().reset_ctx(ctx)

    reset_device = reset_ctx

    def hybridize(self, active=True, **kwargs):
        for child in self._children.values():
            _deref(child).hybridize(active, **kwargs)

    def save_parameters(self, filename, deduplicate=False):
        from .serialization import save_block_parameters
        save_block_parameters(self, filename, deduplicate)

    def load_parameters(self, filename, ctx=None, allow_missing=False, ignore_extra=False,
                        cast_dtype=False, dtype_source="current"):
        from .serialization import load_block_parameters
        load_block_parameters(self, filename, allow_missing, ignore_extra, cast_dtype,
                              dtype_source)

    # MXNet 1.x names
    save_params = save_parameters
    load_params = load_parameters

    # ---- calling ---------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook):
        handle = HookHandle(self._forward_pre_hooks)
        self._forward_pre_hooks[handle.id] = hook
        return handle

    def register_forward_hook(self, hook):
        handle = HookHandle(self._forward_hooks)
        self._forward_hooks[handle.id] = hook
        return handle

    def infer_shape(self, *args):
        """Fill in unknown (0) parameter dims from the inputs; layers override this."""

    def _infer_deferred(self, args):
        params = self._reg_params.values()
        if all(p._data is not None for p in params):
            return
        with _deferred_init_lock:
            if any(p._data is None and not _shape_known(p.shape) for p in params):
                self.infer_shape(*args)
            for p in params:
                if p._is_pending and _shape_known(p.shape):
                    p._finish_deferred_init()

    def __call__(self, *args, **kwargs):
        if trace.in_body_of(self):
            # hybridize re-entering the block to trace it: the outer call runs the hooks
            return _forward(self, "forward", args, kwargs)
        for hook in list(self._forward_pre_hooks.values()):
            hook(self, args)
        self._infer_deferred(args)
        out = self._run_forward(*args, **kwargs)
        for hook in list(self._forward_hooks.values()):
            hook(self, args, out)
        return out

    def _run_forward(self, *args, **kwargs):
        return _forward(self, "forward", args, kwargs)

    def forward(self, *args):
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def summary(self, *inputs):
        from .utils import print_summary
        print_summary(self, *inputs)

    # ---- display ---------------------------------------------------------------------------
    def __repr__(self):
        children = [(k, _deref(v)) for k, v in self._children.items()]
        if not children:
            return f"{type(self).__name__}()"
        body = "\n".join(f"  ({k}): {_indent(repr(b))}" for k, b in children)
        return f"{type(self).__name__}(\n{body}\n)"

    def __reduce__(self):
        raise TypeError("Blocks are not picklable by design; use save_parameters")


def _compiled_may_serve(block, state):
    """A hybridized block's compiled graphs may serve this call (given its __dict__): no
    hooks to run, and no trace running on this thread, which would have to see the block's
    operations, nor hybridize running the block's own code on it (trace.body_of)."""
    return (state["_hybrid_active"] and not state["_forward_pre_hooks"]
            and not state["_forward_hooks"] and not trace.active()
            and not trace.in_body_of(block))


class HybridBlock(Block):
    """A Block that hybridize() can trace into one compiled graph.

    Write `forward(self, x, ...)` with kiln.np/npx, or the MXNet 1.x
    `hybrid_forward(self, F, x, ..., **params)`, which gets F = kiln.ndarray when eager and
    kiln.symbol while tracing, plus this block's own parameters as keyword arguments.
    """

    def register_op_hook(self, callback, monitor_all=False):
        """MXNet 1.x: once hybridized, call callback(name, op name, array) with every op's
        output, and with monitor_all its inputs first, under MXNet's names ('dense0_fwd_
        output'); the block then runs op by op through its MXNet symbol."""
        for child in self._children.values():
            _deref(child).register_op_hook(callback, monitor_all)
        object.__setattr__(self, "_op_hook", (callback, bool(monitor_all)))
        self.__dict__.pop("_kiln_cached", None)     # no compiled program serves it now

    def hybridize(self, active=True, backend=None, static_alloc=False, static_shape=False,
                  **kwargs):
        object.__setattr__(self, "_hybrid_active", bool(active))
        object.__setattr__(self, "_in_format", None)
        opts = dict(backend=backend, static_alloc=static_alloc, static_shape=static_shape)
        opts.update(kwargs)
        object.__setattr__(self, "_hybrid_opts", opts)
        own = self.__dict__.pop("forward", None)   # a forward set on the instance stays
        own = own.own if isinstance(own, DirectForward) else own
        if active:
            object.__setattr__(self, "forward", DirectForward(self, own))
        elif own is not None:
            object.__setattr__(self, "forward", own)
        cached = self.__dict__.get("_kiln_cached")
        if cached is not None:      # hybridize(strict=...) again: applies to the next trace
            cached.strict = bool(kwargs.get("strict", False))
            if cached.policy.mode != shape_policy_of(opts).mode or kwargs.get("dynamic_axes"):
                cached.policy = shape_policy_of(opts)
        super().hybridize(active, backend=backend, static_alloc=static_alloc,
                          static_shape=static_shape, **kwargs)

    def __call__(self, *args, **kwargs):
        # the hot path of a hybridized block: its C dispatcher, then the other paths. Once
        # the C extension is built, kiln_fastcall.BlockCall takes this method's place and
        # does the same without a Python frame (backend/c/fastdispatch.py)
        state = self.__dict__
        cached = state.get("_kiln_cached")
        if cached is not None and cached.dispatch is not None and not kwargs \
                and _compiled_may_serve(self, state):
            out = cached.dispatch(*args)
            if out is not NotImplemented:
                return out
        return self._call_undispatched(args, kwargs)

    _call_in_python = __call__    # kept after BlockCall takes __call__'s place

    def _call_undispatched(self, args, kwargs):
        state = self.__dict__
        if type(self).hybrid_forward is not HybridBlock.hybrid_forward and \
                not trace.in_body_of(self):
            _check_hybrid_forward_inputs(self, args)
        if _SYMBOL_CALL and not kwargs and "symbol" in _kinds_of(args):
            return _SYMBOL_CALL[0](self, args)
        hook = state.get("_op_hook")
        if hook is not None and _OP_HOOK_RUN and state["_hybrid_active"] and not kwargs \
                and trace.current() is None:
            return _OP_HOOK_RUN[0](self, args, *hook)
        cached = state.get("_kiln_cached")
        if cached is not None and not kwargs and _compiled_may_serve(self, state):
            out = cached.call_entry(args)
            if out is not MISS:
                return out
            # body_of sends this thread's calls back into this block (a trace, or the
            # eager fallback when a signature could not be compiled) down the ordinary
            # path to forward
            with trace.body_of(self):
                return cached.call_slow(args)
        return super(HybridBlock, self).__call__(*args, **(kwargs or {}))

    def _run_forward(self, *args, **kwargs):
        if self._hybrid_active and trace.current() is None and not kwargs:
            try:
                from ..hybrid.cached import call_hybridized
            except ImportError:
                return self.forward(*args)
            with trace.body_of(self):
                return call_hybridized(self, *args)
        if self._hybrid_active and not trace.in_body_of(self):
            note_precision_in_trace(self)     # called inside another function's trace
        return _forward(self, "forward", args, kwargs)

    def export(self, path, epoch=0, remove_amp_cast=True, dynamic_axes=None):
        """Write `path-symbol.json` and `path-%04d.params` (epoch); see kiln.export.

        Sizes are symbolic where the block's programs have them (hybridize(dynamic=True),
        dynamic_axes=, or sizes that varied); dynamic_axes={'data': {0: 'batch'}} (an input
        by name or position -> {axis: symbol name}) names them for this file, {} fixes all."""
        from ..export.block_export import export_block
        return export_block(self, path, epoch, dynamic_axes=dynamic_axes)

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define forward() or "
                                  "hybrid_forward()")

    def forward(self, x, *args, **kwargs):
        if type(self).hybrid_forward is HybridBlock.hybrid_forward:
            raise NotImplementedError(f"{type(self).__name__} must define forward() or "
                                      "hybrid_forward()")
        F = f_namespace.current()
        params = {key: p.data() for key, p in self._reg_params.items()}
        params.update(kwargs)
        return _forward(self, "hybrid_forward", (F, x) + args, params)


# once a compiled program has a C dispatcher, HybridBlock.__call__ runs in C (BlockCall)
fastcall.serve_block_calls(HybridBlock)
