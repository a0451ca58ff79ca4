"""The `F` of MXNet 1.x hybrid_forward(F, x): kiln.ndarray when eager, kiln.symbol while
tracing. Both modules look names up here, so F.relu, F.np.sum and F.npx.relu are the very
same registry-backed functions in either."""


def namespace_attr(module_name, name):
    """Attribute lookup of the `F` modules: np and npx, then their functions."""
    if name.startswith("__"):
        raise AttributeError(name)
    from . import np as _knp, npx as _knpx
    if name in ("np", "npx"):
        return _knp if name == "np" else _knpx
    for space in (_knpx, _knp):
        if hasattr(space, name):
            return getattr(space, name)
    raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
