"""The `F` of MXNet 1.x hybrid_forward(F, x): kiln.ndarray when eager, kiln.symbol while
tracing. Both modules look names up here, so F.relu, F.np.sum and F.npx.relu are the very
same registry-backed functions in either. MXNet 1.x's own names (F.FullyConnected,
F.concat(dim=...), nd.random.normal(shape=...)) come first: see nd/namespace.py."""
import types


_FOUND = {}


def namespace_attr(module_name, name):
    """Attribute lookup of the `F` modules: nd's names, np and npx, then their functions.
    Functions return MXNet 1.x NDArrays where 1.x code calls them (nd/legacy_array.py)."""
    if name.startswith("__"):
        raise AttributeError(name)
    found = _FOUND.get((module_name, name))
    if found is None:
        found = _FOUND[(module_name, name)] = _legacy(_lookup(module_name, name))
    return found


def _legacy(found):
    from .nd.legacy_array import returns_legacy, legacy_module
    return legacy_module(found) if isinstance(found, types.ModuleType) and found.__name__ \
        .startswith("kiln.mx.nd.") else returns_legacy(found)


def _lookup(module_name, name):
    from .nd.namespace import lookup
    found = lookup(name)     # MXNet 1.x's names first: F is mxnet.ndarray in 1.x code
    if found is not None:
        return found
    from .. import np as _knp, npx as _knpx
    if name in ("np", "npx"):
        return _knp if name == "np" else _knpx
    for space in (_knpx, _knp):
        if hasattr(space, name):
            return getattr(space, name)
    raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
