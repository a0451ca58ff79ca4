"""The `F` of MXNet 1.x-style hybrid_forward(F, x): a namespace of array functions, one for
eager calls and one for tracing.

gluon sits below the MXNet 1.x layer, so that layer hands over its `nd` and `sym` namespaces
when it is imported (kiln/mx/__init__.py calls `use`), which `import kiln` always does.
Until then F is a plain namespace over npx and np, enough for code written for MXNet 2.x.
"""
from .. import np as _knp, npx as _knpx
from .._core import trace


class NumpyNamespace:
    """F.relu, F.np.sum, F.npx.relu: npx's functions first, then np's."""

    def __getattr__(self, name):
        if name == "np":
            return _knp
        if name == "npx":
            return _knpx
        for space in (_knpx, _knp):
            if hasattr(space, name):
                return getattr(space, name)
        raise AttributeError(f"F has no attribute {name!r}")


_spaces = {"eager": NumpyNamespace(), "traced": NumpyNamespace()}


def use(eager, traced):
    """Make `eager` the F of eager calls and `traced` the F of traced ones."""
    _spaces["eager"], _spaces["traced"] = eager, traced


def current():
    """The F for a call made now: the traced namespace while hybridize traces."""
    return _spaces["traced" if trace.current() is not None else "eager"]
