"""The public namespaces of kiln and their public names: what the API reference shows
(docs/hooks/reference.py) and what tests/test_docs.py requires a docstring for.

A namespace's public names are its `__all__` when it has one, else the names bound in it
that do not start with `_`, leaving out submodules (each is a namespace of its own) and
callables imported from outside kiln and NumPy (stdlib and typing helpers). Constants
(`np.pi`, `np.float32`'s value as a dtype, ...) are listed but need no docstring.

    python tools/api_names.py            # every namespace: names, and the undocumented ones
"""
import importlib
import inspect
import sys
import types

# reference page (docs/reference/<page>.md) -> the namespaces it documents, in order
PAGES = {
    "kiln": ["kiln"],
    "np": ["kiln.np", "kiln.np.random", "kiln.np.linalg"],
    "npx": ["kiln.npx"],
    "autograd": ["kiln.autograd"],
    "gluon": ["kiln.gluon", "kiln.gluon.utils"],
    "gluon-nn": ["kiln.gluon.nn"],
    "gluon-rnn": ["kiln.gluon.rnn"],
    "gluon-loss": ["kiln.gluon.loss"],
    "gluon-data": ["kiln.gluon.data", "kiln.gluon.data.vision",
                   "kiln.gluon.data.vision.transforms"],
    "gluon-metric": ["kiln.gluon.metric"],
    "gluon-model-zoo": ["kiln.gluon.model_zoo", "kiln.gluon.model_zoo.vision"],
    "gluon-contrib": ["kiln.gluon.contrib.nn", "kiln.gluon.contrib.rnn",
                      "kiln.gluon.contrib.cnn", "kiln.gluon.contrib.data",
                      "kiln.gluon.contrib.estimator"],
    "init-optimizer": ["kiln.init", "kiln.optimizer", "kiln.lr_scheduler"],
    "export": ["kiln.export", "kiln.onnx"],
    "contrib": ["kiln.contrib.amp", "kiln.contrib.quantization"],
    "distributed": ["kiln.distributed"],
    "fit-io": ["kiln.fit", "kiln.io", "kiln.recordio"],
    "nd": ["kiln.nd", "kiln.nd.random", "kiln.nd.linalg", "kiln.nd.contrib", "kiln.nd.sparse"],
    "sym-mod": ["kiln.sym", "kiln.mod"],
    "mx": ["kiln.mxnet_alias", "kiln.context", "kiln.base", "kiln.mx.base", "kiln.image",
           "kiln.kvstore", "kiln.callback", "kiln.model", "kiln.monitor", "kiln.operator",
           "kiln.profiler", "kiln.visualization", "kiln.test_utils", "kiln.util",
           "kiln.contrib", "kiln.rnn", "kiln.runtime", "kiln.engine", "kiln.log", "kiln.name",
           "kiln.attribute"],
}


def namespaces():
    return [ns for page in PAGES.values() for ns in page]


def _from_outside(obj):
    """A function or class imported from outside kiln and NumPy (a helper, not API)."""
    if not (inspect.isclass(obj) or inspect.isroutine(obj)):
        return False
    origin = getattr(obj, "__module__", None) or ""
    return origin.split(".")[0] not in ("kiln", "numpy")


def public_names(namespace):
    """The sorted public names of the namespace (a dotted module path)."""
    module = importlib.import_module(namespace)
    if hasattr(module, "__all__"):
        names = list(module.__all__)
    else:
        names = [n for n in vars(module) if not n.startswith("_")]
    out = []
    for name in names:
        obj = getattr(module, name)
        if isinstance(obj, types.ModuleType) or _from_outside(obj):
            continue
        out.append(name)
    if module.__name__ == "kiln.mx.nd":      # nd serves its functions by name on first use
        from kiln.mx.nd import namespace
        out += [n for n in namespace._PUBLIC if n not in out]
    return sorted(set(out), key=lambda n: (n.lower(), n))


def needs_docstring(obj):
    """Functions and classes say what they do; constants and NumPy's dtypes cannot."""
    return inspect.isroutine(obj) or inspect.isclass(obj)


def has_own_docstring(obj):
    """A class needs a docstring of its own: the one it would inherit describes its base."""
    if inspect.isclass(obj):
        return bool((obj.__dict__.get("__doc__") or "").strip())
    return bool(inspect.getdoc(obj))


def undocumented(namespace):
    """The public names of a namespace whose function or class has no docstring."""
    module = importlib.import_module(namespace)
    return [n for n in public_names(namespace)
            if needs_docstring(getattr(module, n)) and not has_own_docstring(getattr(module, n))]


def main():
    import kiln  # noqa: F401  (installs the public module paths)
    missing = 0
    for ns in namespaces():
        names, bad = public_names(ns), undocumented(ns)
        missing += len(bad)
        print(f"{ns}: {len(names)} names" + (f", undocumented: {' '.join(bad)}" if bad else ""))
    print(f"{missing} undocumented")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
