"""Run unmodified MXNet code on kiln: `import mxnet` (and every `mxnet.X.Y`) gives kiln.

    import kiln.mxnet_alias; kiln.mxnet_alias.install()
    from mxnet import np, npx, gluon          # kiln.np, kiln.npx, kiln.gluon

or, without touching the script: `python -m kiln mxnet script.py [args]`.

The alias is a meta-path finder: `mxnet.A.B` imports `kiln.A.B`, after renaming the parts
whose names differ between the two (`numpy` -> `np`, `ndarray` -> `nd`, ...). So a module
added to kiln later (say `kiln.gluon.rnn`) is reachable as `mxnet.gluon.rnn` with no change
here. `sys.modules["mxnet.A.B"]` is the kiln module itself, not a copy. The top-level
`mxnet` is a thin module of its own that forwards attribute lookups to kiln, so aliasing
never adds MXNet's names to kiln's namespace.
"""
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types

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


class _MXNetModule(types.ModuleType):
    """The top-level `mxnet`: attribute lookups go to kiln, through RENAMES."""

    def __getattr__(self, attr):
        import kiln
        if attr in TOP_LEVEL:
            return getattr(importlib.import_module(f"kiln.{TOP_LEVEL[attr]}"), attr)
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


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target):
        self.target = target

    def create_module(self, spec):
        if spec.name == "mxnet":
            module = _MXNetModule("mxnet", "kiln standing in for MXNet (kiln.mxnet_alias)")
            module.__path__ = []
            return module
        return None

    def exec_module(self, module):
        if module.__name__ == "mxnet":
            import kiln
            module.__version__ = kiln.__version__
            module.__kiln_alias__ = True
            return
        # the import system returns whatever sys.modules holds after exec_module
        target = importlib.import_module(self.target)
        if not hasattr(target, "__path__"):
            # MXNet's ndarray/symbol are packages (`import mxnet.ndarray.contrib`); an empty
            # path lets the import system ask this finder for their submodules
            target.__path__ = []
        sys.modules[module.__name__] = target


class MXNetAliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname != "mxnet" and not fullname.startswith("mxnet."):
            return None
        kiln_name = _kiln_name(fullname)
        if kiln_name is None:
            return None  # the usual ModuleNotFoundError names mxnet.<what is missing>
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(kiln_name),
                                              is_package=True)


_FINDER = MXNetAliasFinder()


def is_installed():
    return _FINDER in sys.meta_path


def install():
    """Make `import mxnet` give kiln. Returns False (and changes nothing) when the real
    MXNet is already imported, True otherwise. Calling it again is harmless."""
    loaded = sys.modules.get("mxnet")
    if loaded is not None and not getattr(loaded, "__kiln_alias__", False):
        return False
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    return True


def uninstall():
    """Remove the alias and forget the `mxnet` modules it created (kiln stays imported)."""
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
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
    if not install():
        print("kiln mxnet: the real MXNet is already imported; not aliasing", file=sys.stderr)
    sys.argv = list(argv)
    runpy.run_path(argv[0], run_name="__main__")
    return 0
