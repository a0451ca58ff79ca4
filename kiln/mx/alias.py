"""Module paths that lead elsewhere: `import mxnet` giving kiln, kiln's public faces, and
the old paths of moved modules. One meta-path finder serves all three.

    import kiln.mxnet_alias; kiln.mxnet_alias.install()
    from mxnet import np, npx, gluon          # kiln.np, kiln.npx, kiln.gluon

or, without touching the script: `python -m kiln mxnet script.py [args]`.

- `mxnet.A.B` imports `kiln.A.B`, after renaming the parts whose names differ between the
  two (`numpy` -> `np`, `ndarray` -> `nd`, ...), once `install()` has been called. So a
  module added to kiln later (say `kiln.gluon.rnn`) is reachable as `mxnet.gluon.rnn` with
  no change here. The top-level `mxnet` is a thin module of its own that forwards attribute
  lookups to kiln, so aliasing never adds MXNet's names to kiln's namespace.
- `kiln.nd`, `kiln.image`, `kiln.autograd`, ... (FACES) are public paths of modules that
  live in kiln's packages (kiln/_core, kiln/mx, ...): always on, no warning.
- `kiln.nd_api`, `kiln.sym_graph`, ... (MOVED) are the old private paths of moved modules:
  they still import, with a DeprecationWarning naming the new path.

In every case `sys.modules[alias]` is the real module itself, not a copy, so there is one
module object per file whatever path imported it.
"""
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
import warnings

# MXNet's module name -> kiln's candidates, first importable wins (kiln.nd/kiln.sym/kiln.mod
# are MXNet 1.x's namespaces; before they exist, the closest kiln module stands in)
RENAMES = {
    "numpy": ("np",),
    "numpy_extension": ("npx",),
    "ndarray": ("nd", "ndarray"),
    "symbol": ("sym", "symbol"),
    "module": ("mod",),
    "device": ("context",),
    "initializer": ("init",),
    "kv": ("kvstore",),
    "viz": ("visualization",),
    "img": ("image",),
    "rnd": ("random",),
    "mon": ("monitor",),
}

# names MXNet's top level re-exports from one of its modules -> kiln's module holding them
TOP_LEVEL = {name: "util" for name in (
    "use_np", "use_np_array", "use_np_shape", "set_np_shape", "is_np_array", "is_np_shape",
    "np_array", "np_shape")}
TOP_LEVEL["AttrScope"] = "attribute"

# the MXNet version the alias reports: the 1.x API kiln follows, so `mxnet>=1.4,<2` checks pass
MXNET_VERSION = "1.9.1"

# MXNet module paths whose kiln module sits elsewhere (a file MXNet splits out that kiln
# keeps in the namespace module, or a name that differs below the top level). An entry also
# covers the modules under it, as FACES and MOVED do.
MXNET_PATHS = {
    "mxnet.base": "kiln.mx.base", "mxnet.error": "kiln.mx.base",
    "mxnet.registry": "kiln.mx.registry",
    "mxnet.random": "kiln.mx.nd.random",     # 1.x: `from .ndarray.random import *` and seed
    "mxnet.ndarray.ndarray": "kiln.mx.nd", "mxnet.ndarray.op": "kiln.mx.nd",
    "mxnet.ndarray._internal": "kiln.mx.nd.internal",
    "mxnet.symbol._internal": "kiln.mx.nd.internal",
    "mxnet.symbol.op": "kiln.mx.sym", "mxnet.symbol.numpy._symbol": "kiln.mx.sym.numpy",
    "mxnet.executor": "kiln.mx.sym.executor",
    "mxnet.numpy.multiarray": "kiln.np", "mxnet.numpy.function_base": "kiln.np",
    "mxnet.numpy.stride_tricks": "kiln.np", "mxnet.numpy.utils": "kiln.np",
    "mxnet.numpy_extension.utils": "kiln.npx",
    "mxnet.io.io": "kiln.io", "mxnet.image.image": "kiln.mx.image",
    "mxnet.kvstore.kvstore": "kiln.mx.kvstore", "mxnet.kvstore.base": "kiln.mx.kvstore",
    "mxnet.optimizer.optimizer": "kiln.optimizer",
    "mxnet.rnn.rnn_cell": "kiln.mx.rnn", "mxnet.rnn.rnn": "kiln.mx.rnn",
    "mxnet.gluon.contrib.nn.basic_layers": "kiln.gluon.contrib.nn",
    "mxnet.gluon.contrib.rnn.rnn_cell": "kiln.gluon.contrib.rnn",
    "mxnet.gluon.contrib.rnn.conv_rnn_cell": "kiln.gluon.contrib.conv_rnn",
    "mxnet.gluon.contrib.cnn.conv_layers": "kiln.gluon.contrib.cnn",
    "mxnet.gluon.contrib.data.sampler": "kiln.gluon.contrib.data",
}

# MXNet module paths kiln deliberately has no module for, and why (the ImportError says so)
MXNET_ABSENT = {
    "mxnet.module.python_module": "PythonModule/PythonLossModule are not part of kiln's "
                                  "Module API",
    "mxnet.module.sequential_module": "SequentialModule is not part of kiln's Module API",
    "mxnet._ctypes": "kiln has no C library behind its Python API",
    "mxnet._ffi": "kiln has no C library behind its Python API",
    "mxnet.cython": "kiln has no C library behind its Python API",
    "mxnet.libinfo": "kiln has no libmxnet.so to locate",
    "mxnet.library": "kiln loads no MXNet operator libraries",
    "mxnet.rtc": "kiln runs on the CPU; there is no CUDA runtime compilation",
    "mxnet.torch": "MXNet's Torch plugin is not part of kiln",
    "mxnet.tvmop": "kiln has no TVM-generated operators",
    "mxnet.numpy_op_signature": "kiln's np functions are Python functions with their own "
                                "signatures; there are no C operators to annotate",
}


def _kiln_name(mxnet_name):
    """'mxnet.numpy.random' -> the first importable kiln name, or None."""
    parts = mxnet_name.split(".")[1:]
    if not parts:
        return "kiln"
    prefix = "kiln"
    for depth, part in enumerate(parts):
        candidates = RENAMES.get(part, ()) + (part,) if depth == 0 else (part,)
        for cand in candidates:
            name = f"{prefix}.{cand}"
            if _importable(name):
                prefix = name
                break
            held = _module_attribute(prefix, cand)
            if held is not None:   # kiln.nd is a module whose `contrib` is kiln.nd_contrib
                prefix = held
                break
        else:
            return None
    return prefix


def _module_attribute(module_name, attr):
    """The name of the module `module_name.attr` refers to, when it is one, else None."""
    try:
        value = getattr(importlib.import_module(module_name), attr, None)
    except ImportError:
        return None
    return value.__name__ if isinstance(value, types.ModuleType) else None


def _importable(name):
    if name in sys.modules:
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


# kiln's public module paths whose files live in a package, and where they live
FACES = {
    "kiln.nd": "kiln.mx.nd", "kiln.ndarray": "kiln.mx.nd",
    "kiln.sym": "kiln.mx.sym", "kiln.symbol": "kiln.mx.sym",
    "kiln.autograd": "kiln._core.autograd", "kiln.context": "kiln._core.context",
    "kiln.base": "kiln._core.base",
    "kiln.metric": "kiln.gluon.metric", "kiln.lr_scheduler": "kiln.optimizer.lr_scheduler",
    "kiln.recordio": "kiln.data.recordio", "kiln.onnx": "kiln.mx.onnx",
    "kiln.mxnet_alias": "kiln.mx.alias",
}
FACES.update({f"kiln.{name}": f"kiln.mx.{name}" for name in (
    "image", "callback", "model", "monitor", "operator", "profiler",
    "visualization", "kvstore", "test_utils", "util", "attribute", "engine", "log", "name",
    "runtime", "rnn", "mod", "contrib")})

# old private paths of modules that moved (kept importable, with a DeprecationWarning)
MOVED = {
    "kiln.gluon.model_zoo.vision._more_sums": "kiln.gluon.model_zoo.model_store",
    "kiln.aliasing": "kiln._core.aliasing", "kiln.aligned": "kiln._core.aligned",
    "kiln.dispatch": "kiln._core.dispatch", "kiln.indexing": "kiln._core.indexing",
    "kiln.ndarray_methods": "kiln._core.methods", "kiln.writes": "kiln._core.writes",
    "kiln.nd_api": "kiln.mx.nd.functions", "kiln.nd_contrib": "kiln.mx.nd.contrib",
    "kiln.nd_contrib_attention": "kiln.mx.nd.contrib.attention",
    "kiln.nd_contrib_boxes": "kiln.mx.nd.contrib.boxes",
    "kiln.nd_contrib_misc": "kiln.mx.nd.contrib.misc",
    "kiln.nd_contrib_proposal": "kiln.mx.nd.contrib.proposal",
    "kiln.nd_contrib_resize": "kiln.mx.nd.contrib.resize",
    "kiln.nd_extras": "kiln.mx.nd.utils", "kiln.nd_linalg": "kiln.mx.nd.linalg",
    "kiln.nd_optimizer_ops": "kiln.mx.nd.optimizer_ops", "kiln.nd_random": "kiln.mx.nd.random",
    "kiln.nd_random_more": "kiln.mx.nd.random.samplers",
    "kiln.nd_random_pdf": "kiln.mx.nd.random.pdf",
    "kiln.mxnet_ops": "kiln.mx.ops", "kiln.mxnet_ops_ctc": "kiln.mx.ops.ctc",
    "kiln.mxnet_ops_deform": "kiln.mx.ops.deformable",
    "kiln.mxnet_ops_extra": "kiln.mx.ops", "kiln.mxnet_ops_more": "kiln.mx.ops.math",
    "kiln.mxnet_ops_rnn": "kiln.mx.ops.rnn", "kiln.mxnet_ops_seq": "kiln.mx.ops.sequence",
    "kiln.mxnet_ops_stn": "kiln.mx.ops.spatial_transformer",
    "kiln.mxnet_ops_tensor": "kiln.mx.ops.tensor", "kiln.f_namespace": "kiln.mx.f_namespace",
    "kiln.sym_graph": "kiln.mx.sym.symbol", "kiln.sym_json": "kiln.mx.sym.serialization",
    "kiln.sym_run": "kiln.mx.sym.evaluation", "kiln.sym_executor": "kiln.mx.sym.executor",
    "kiln.image_augment": "kiln.mx.image.augment",
    "kiln.image_detection": "kiln.mx.image.detection",
    "kiln.image_iter": "kiln.mx.image.iterator", "kiln.image_rotate": "kiln.data.rotate",
    "kiln.metric_extra": "kiln.gluon.metric.correlation",
    "kiln.gluon.mxnet_symbol_block": "kiln.mx.sym.symbol_block",
    "kiln.export.mxnet_json": "kiln.mx.sym.mxnet_json",
    "kiln.bench_command": "kiln.cli.bench", "kiln.export.commands": "kiln.cli.models",
    "kiln.graph.ir": "kiln._core.ir", "kiln.graph.trace": "kiln._core.trace",
    "kiln.graph.alias_paths": "kiln._core.alias_paths",
    "kiln.graph.cached": "kiln.hybrid.cached", "kiln.graph.explain": "kiln.hybrid.explain",
    "kiln.graph.fallback": "kiln.hybrid.fallback",
    # size splits that became topic modules; the public namespace holds their names
    "kiln.np.more_math": "kiln.np", "kiln.np.more_arrays": "kiln.np", "kiln.npx.more": "kiln.npx",
    "kiln.gluon.loss_extra": "kiln.gluon.loss", "kiln.gluon.nn.extra_layers": "kiln.gluon.nn",
    "kiln.optimizer.more": "kiln.optimizer",
}


def _redirect(fullname, tables=(FACES, MOVED)):
    """(real module name, deprecation message or None) for a path that leads elsewhere,
    else (None, None). A table entry also covers the modules under it."""
    head, rest = fullname, ""
    while head:
        for table in tables:
            if head in table:
                real = table[head] + rest
                note = (f"{fullname} moved to {real}; the old path will be removed"
                        if table is MOVED else None)
                return real, note
        head, dot, tail = head.rpartition(".")
        rest = dot + tail + rest if head else rest
    return None, None


class _MXNetModule(types.ModuleType):
    """The top-level `mxnet`: attribute lookups go to kiln, through RENAMES."""

    def __getattr__(self, attr):
        import kiln
        if attr in TOP_LEVEL:
            return getattr(importlib.import_module(f"kiln.{TOP_LEVEL[attr]}"), attr)
        if f"mxnet.{attr}" in MXNET_PATHS:
            return importlib.import_module(f"mxnet.{attr}")
        for cand in RENAMES.get(attr, ()) + (attr,):
            if hasattr(kiln, cand):
                return getattr(kiln, cand)
            if _importable(f"kiln.{cand}"):
                return importlib.import_module(f"kiln.{cand}")
        raise AttributeError(f"module 'mxnet' (kiln's alias) has no attribute {attr!r}: kiln "
                             f"does not implement mxnet.{attr}")

    def __dir__(self):
        import kiln
        return sorted(set(dir(kiln)) | set(RENAMES) | set(TOP_LEVEL))


class _KeepsNames(types.ModuleType):
    """A kiln module some of whose names are also MXNet submodule names (kiln.nd.ndarray is
    the array class; mxnet.ndarray.ndarray is a module): the import system's
    `setattr(parent, child, module)` after `import mxnet.ndarray.ndarray` leaves them be."""

    def __setattr__(self, name, value):
        if isinstance(value, types.ModuleType) and name in vars(self).get("_alias_kept", ()):
            return
        super().__setattr__(name, value)


def _keep_parent_name(alias):
    """Before `alias` (an mxnet.* path) is imported: when its parent's real module holds a
    non-module of the same name, keep that name from being replaced by the module."""
    parent_name, _, child = alias.rpartition(".")
    parent = sys.modules.get(parent_name)
    value = vars(parent).get(child) if parent is not None else None
    if value is None or isinstance(value, types.ModuleType):
        return
    if type(parent) is types.ModuleType:
        parent.__class__ = _KeepsNames
    if isinstance(parent, _KeepsNames):
        vars(parent).setdefault("_alias_kept", set()).add(child)


class _AliasLoader(importlib.abc.Loader):
    """Loads an alias as the real module `target` (importing it if need be)."""

    def __init__(self, target, note=None):
        self.target, self.note = target, note

    def create_module(self, spec):
        if spec.name == "mxnet":
            module = _MXNetModule("mxnet", "kiln standing in for MXNet (kiln.mxnet_alias)")
            module.__path__ = []
            return module
        return None

    def exec_module(self, module):
        if module.__name__ == "mxnet":
            import kiln
            module.__version__ = MXNET_VERSION
            module.__kiln_version__ = kiln.__version__
            module.__kiln_alias__ = True
            return
        if self.note is not None:
            warnings.warn(self.note, DeprecationWarning, stacklevel=3)
        # the import system returns whatever sys.modules holds after exec_module
        target = importlib.import_module(self.target)
        if module.__name__.startswith("mxnet.") and not hasattr(target, "__path__"):
            # MXNet's ndarray/symbol are packages (`import mxnet.ndarray.contrib`); an empty
            # path lets the import system ask this finder for their submodules
            target.__path__ = []
        if module.__name__.startswith("mxnet."):
            _keep_parent_name(module.__name__)
        sys.modules[module.__name__] = target


class AliasFinder(importlib.abc.MetaPathFinder):
    """kiln's faces and moved paths always; `mxnet.*` once install() has been called."""

    def __init__(self):
        self.mxnet = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname.startswith("kiln."):
            real, note = _redirect(fullname)
            if real is None or not _importable(real):
                return None
            return importlib.machinery.ModuleSpec(fullname, _AliasLoader(real, note),
                                                  is_package=True)
        if not self.mxnet or (fullname != "mxnet" and not fullname.startswith("mxnet.")):
            return None
        absent = [p for p in MXNET_ABSENT if fullname == p or fullname.startswith(p + ".")]
        if absent:
            raise ModuleNotFoundError(f"No module named {fullname!r}: {MXNET_ABSENT[absent[0]]} "
                                      f"(kiln standing in for MXNet)", name=fullname)
        kiln_name = _redirect(fullname, (MXNET_PATHS,))[0] or _kiln_name(fullname)
        if kiln_name is None or not _importable(kiln_name):
            return None  # the usual ModuleNotFoundError names mxnet.<what is missing>
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(kiln_name),
                                              is_package=True)


_FINDER = AliasFinder()


def install_paths():
    """Put the finder first on the import path (`import kiln` does this)."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def is_installed():
    """Whether `import mxnet` gives kiln: `install()` was called and its import finder is in place.
    """
    return _FINDER.mxnet and _FINDER in sys.meta_path


def install():
    """Make `import mxnet` give kiln. Returns False (and changes nothing) when the real
    MXNet is already imported, True otherwise. Calling it again is harmless."""
    loaded = sys.modules.get("mxnet")
    if loaded is not None and not getattr(loaded, "__kiln_alias__", False):
        return False
    install_paths()
    _FINDER.mxnet = True
    return True


def uninstall():
    """Remove the `mxnet` alias and forget the `mxnet` modules it created (kiln and its
    own paths stay)."""
    _FINDER.mxnet = False
    for name in [n for n in sys.modules if n == "mxnet" or n.startswith("mxnet.")]:
        module = sys.modules[name]
        if getattr(module, "__kiln_alias__", False) or module.__name__.startswith("kiln"):
            del sys.modules[name]


def main(argv):
    """`python -m kiln mxnet script.py [args]`: run a script with `mxnet` meaning kiln."""
    import runpy
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m kiln mxnet SCRIPT.py [args...]\n\nRuns SCRIPT with `import "
              "mxnet` (and mxnet.np, mxnet.gluon, ...) resolving to kiln.")
        return 0 if argv else 2
    if not os.path.exists(argv[0]):      # a script, or a directory or zip with __main__.py
        print(f"kiln mxnet: no such script: {argv[0]}", file=sys.stderr)
        return 2
    if not install():
        print("kiln mxnet: the real MXNet is already imported; not aliasing", file=sys.stderr)
    sys.argv = list(argv)
    runpy.run_path(argv[0], run_name="__main__")
    return 0
