"""kiln.gluon: Blocks, Parameters and layers (MXNet Gluon's API).

loss, Trainer, data and utils load on first use, so `import kiln` stays light and each of
those modules can be developed on its own.
"""
import importlib

from .parameter import (Parameter, Constant, ParameterNotInitializedError,  # noqa: F401
                        DeferredInitializationError)
from .parameter_dict import ParameterDict  # noqa: F401
from .block import Block, HybridBlock  # noqa: F401
from . import nn, parameter  # noqa: F401

parameter.ParameterDict = ParameterDict      # MXNet's gluon.parameter holds it too

_LAZY_MODULES = ("loss", "trainer", "data", "utils", "rnn", "model_zoo", "metric", "contrib")


def __getattr__(name):
    if name in _LAZY_MODULES:
        return importlib.import_module(f".{name}", __name__)
    if name == "Trainer":
        return importlib.import_module(".trainer", __name__).Trainer
    if name == "SymbolBlock":
        return importlib.import_module(".symbol_block", __name__).SymbolBlock
    if name == "tensor_types":     # MXNet's (Symbol, NDArray), for isinstance checks
        from .._core.ndarray import ndarray
        from .symbol_block import symbol_types
        return symbol_types() + (ndarray,)
    raise AttributeError(f"module 'kiln.gluon' has no attribute {name!r}")
