"""Helpers that gradient rules share."""
from .._core.symdim import same_shape


def sum_to(g, like):
    """Sum the broadcast dimensions of `g` away so it matches `like`'s shape and dtype."""
    shape = like.shape
    if not same_shape(g.shape, shape):
        from .reduce import sum_ as sum_prim
        from .shape import reshape
        lead = g.ndim - len(shape)
        axes = tuple(range(lead)) + tuple(
            lead + i for i, d in enumerate(shape) if d == 1 and g.shape[lead + i] != 1)
        if axes:
            g = sum_prim(g, axis=axes, keepdims=False)
        if not same_shape(g.shape, shape):
            g = reshape(g, shape=tuple(shape))
    if g.dtype != like.dtype:
        if like.dtype.kind not in "fc":
            return None
        from .elementwise import cast
        g = cast(g, dtype=like.dtype)
    return g
