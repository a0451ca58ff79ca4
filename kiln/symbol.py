"""`F` in hybrid_forward(F, x) is this module while hybridize traces.

It exposes the same functions as kiln.ndarray (F.relu, F.np.sum, F.npx.relu); they are the
very same registry-backed functions, which build graph nodes when given symbolic arrays.
"""


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    from . import np as _knp, npx as _knpx
    if name in ("np", "npx"):
        return _knp if name == "np" else _knpx
    for space in (_knpx, _knp):
        if hasattr(space, name):
            return getattr(space, name)
    raise AttributeError(f"module 'kiln.symbol' has no attribute {name!r}")
