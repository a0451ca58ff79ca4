"""ParameterDict: an ordered name -> Parameter mapping with bulk operations.

`block.params` is one of these owned by the block: `params.get(name, shape=...)` creates a
parameter and registers it on the block (MXNet 1.x style). `block.collect_params()` returns
an unowned one keyed by structural names ('0.weight', 'features.2.bias').
"""
import re
import weakref
from collections import OrderedDict

from .._core.base import KilnError, where_in_user_code
from .parameter import Parameter, Constant


class ParameterDict(OrderedDict):
    """An ordered dict of Parameters by name (what `collect_params()` returns), with `initialize`,
    `zero_grad`, `setattr`, `save` and `load` acting on all of them."""
    def __init__(self, items=(), owner=None, shared=None, prefix=""):
        # MXNet 1.x's own constructor, ParameterDict(prefix, shared): a standalone dict whose
        # get() makes parameters named prefix + name
        self._standalone = isinstance(items, str)
        if self._standalone:
            items, prefix = (), items
        super().__init__(items)
        # the Block whose own parameters these are, if any; held weakly, as the block holds
        # this dict: a cycle kept every dropped block (and its compiled programs' buffers)
        # alive until a full garbage collection
        self._owner_ref = None if owner is None else weakref.ref(owner)
        self._shared = shared    # params=... given to the owner's constructor (to share)
        self.prefix = prefix     # a named block's MXNet 1.x prefix (gluon/naming.py)

    @property
    def _owner(self):
        return None if self._owner_ref is None else self._owner_ref()

    # ---- creating parameters (owned dicts only) --------------------------------------------
    def get(self, name, *default, **kwargs):
        """Return the parameter `name`, creating it (with **kwargs) on an owned dict.

        On a plain (collected) dict this is dict.get(name, default); a standalone one
        (MXNet 1.x's `ParameterDict(prefix)`) makes `prefix + name` when it has none.
        """
        if self._standalone:
            name = self.prefix + name
        if name in self:
            param = self[name]
            if "shape" in kwargs and kwargs["shape"] is not None:
                param.shape = kwargs["shape"]   # fills unknown dims, checks known ones
            return param
        if self._owner is None and not self._standalone:
            return default[0] if default else None
        if self._shared is not None and name in self._shared:
            param = self._shared[name]
        else:
            param = Parameter(name, **kwargs)
        if self._owner is None:
            self[name] = param
            return param
        # a named block may take it from the shared dict by its MXNet 1.x name instead
        return self._owner._register_param(name, param)

    def get_constant(self, name, value=None):
        if name in self:
            return self[name]
        if self._owner is None:
            raise KilnError("get_constant() needs the params of a block (block.params)")
        const = Constant(name, value)
        self._owner._register_param(name, const)
        return const

    # ---- bulk operations -------------------------------------------------------------------
    def initialize(self, init=None, ctx=None, verbose=False, force_reinit=False):
        from .. import init as kinit
        import warnings
        default = kinit.create(init) if init is not None else kinit.Uniform()
        if verbose:
            default.set_verbosity(True)
        skipped = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for name, param in self.items():
                if param._data is not None and not force_reinit:
                    skipped.append(name)
                    continue
                param.initialize(None, ctx, default, force_reinit=force_reinit, _path=name)
        if skipped:
            warnings.warn(f"{len(skipped)} parameter(s) already initialized were left alone "
                          f"({', '.join(skipped[:5])}{', ...' if len(skipped) > 5 else ''}). "
                          "Set force_reinit=True to re-initialize.", stacklevel=3)

    def zero_grad(self):
        for param in self.values():
            param.zero_grad()

    def setattr(self, name, value):
        """Set one attribute on every parameter, e.g. setattr('grad_req', 'null')."""
        for param in self.values():
            setattr(param, name, value)

    def reset_ctx(self, ctx=None):
        for param in self.values():
            param.reset_ctx(ctx)

    reset_device = reset_ctx

    def list_ctx(self):
        """The contexts of all the parameters (MXNet's union)."""
        from .._core.context import cpu
        found = []
        for param in self.values():
            found.extend(c for c in param.list_ctx() if c not in found)
        return found or [cpu()]

    def cast(self, dtype):
        for param in self.values():
            param.cast(dtype)

    def select(self, pattern):
        regex = re.compile(pattern)
        return ParameterDict((k, v) for k, v in self.items() if regex.match(k))

    def update(self, other=(), **kwargs):
        items = other.items() if hasattr(other, "items") else other
        for k, v in items:
            if k in self and self[k] is not v:
                raise KilnError(f"cannot update ParameterDict: a different parameter is "
                                f"already named {k!r}{where_in_user_code()}")
            self[k] = v
        for k, v in kwargs.items():
            self[k] = v

    # ---- MXNet 1.x files ----------------------------------------------------------------------
    def save(self, filename, strip_prefix=""):
        """Write every parameter in MXNet's binary NDArray format (which MXNet loads too),
        named by this dict's keys without `strip_prefix`."""
        from ..export.mxnet_params import write
        names, arrays = [], []
        for name, param in self.items():
            if param._data is None:
                raise KilnError(f"ParameterDict.save: parameter {name!r} has no data yet; "
                                f"initialize the network and run it once{where_in_user_code()}")
            if strip_prefix and not name.startswith(strip_prefix):
                raise KilnError(f"ParameterDict.save: {name!r} does not start with "
                                f"strip_prefix {strip_prefix!r}{where_in_user_code()}")
            names.append(name[len(strip_prefix):])
            arrays.append(param._data._concrete("ParameterDict.save"))
        write(filename, arrays, names)

    def load(self, filename, ctx=None, allow_missing=False, ignore_extra=False,
             restore_prefix="", cast_dtype=False, dtype_source="current"):
        """Load a params file (MXNet's binary format, or kiln's npz as export and
        save_parameters write) by name: `restore_prefix` + the file's name. 'arg:'/'aux:'
        prefixes and an exported graph's constants are handled, so the file `export`
        wrote loads into a fresh network of the same architecture."""
        from .serialization import read_param_entries, load_into
        loaded = {restore_prefix + k: v for k, v in
                  read_param_entries(filename, "ParameterDict.load").items()}
        load_into(self, loaded, filename, allow_missing, ignore_extra, cast_dtype,
                  dtype_source, f"ParameterDict.load: {filename} does not match")

    def __repr__(self):
        if self.prefix:          # a named block's parameters print as MXNet 1.x prints them
            lines = "\n".join(f"  {v!r}" for v in self.values())
            return f"{self.prefix} (\n{lines}\n)"
        if not self:
            return "{}"
        lines = [f"{k!r}: {v!r}" for k, v in self.items()]
        return "{" + ",\n ".join(lines) + "}"

    # no pickle: parameters are saved with save_parameters (npz) or save (MXNet's format)
    def __reduce__(self):
        raise TypeError("ParameterDict is not picklable; use save_parameters/load_parameters")
