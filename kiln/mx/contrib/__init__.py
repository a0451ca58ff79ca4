"""MXNet's `mx.contrib`: the old autograd API, DataLoaderIter, and the contrib op
namespaces (`mx.contrib.nd` / `mx.contrib.sym` are kiln.nd.contrib's detection ops;
`mx.contrib.onnx` is kiln.onnx)."""
import importlib

from . import autograd, io  # noqa: F401

_ALIASES = {"ndarray": "kiln.nd_contrib", "nd": "kiln.nd_contrib",
            "symbol": "kiln.nd_contrib", "sym": "kiln.nd_contrib", "onnx": "kiln.onnx"}


def __getattr__(name):
    if name in _ALIASES:
        return importlib.import_module(_ALIASES[name])
    raise AttributeError(f"module 'kiln.contrib' has no attribute {name!r}")
