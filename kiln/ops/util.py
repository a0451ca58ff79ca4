"""Helpers that gradient rules share."""
from .._core.symdim import is_symbolic, provably, same_at_every_size


def _broadcast(d, gd):
    """Was `like`'s dim d broadcast to g's dim gd (an axis sum_to sums)? A dim of 1
    against a symbolic one is summed without asking the symbol's value (a sum over an
    axis of 1 is the identity): asking would pin a batch to 1 or more than 1."""
    if gd is d or (is_symbolic(d) or is_symbolic(gd)) and provably(d, "==", gd):
        return False
    if not is_symbolic(d) and d == 1:
        return not (not is_symbolic(gd) and gd == 1)
    return d == 1 and gd != 1


def sum_to(g, like):
    """Sum the broadcast dimensions of `g` away so it matches `like`'s shape and dtype."""
    shape = like.shape
    if not same_at_every_size(g.shape, shape):
        from .reduce import sum_ as sum_prim
        from .shape import reshape
        lead = g.ndim - len(shape)
        axes = tuple(range(lead)) + tuple(
            lead + i for i, d in enumerate(shape) if _broadcast(d, g.shape[lead + i]))
        if axes:
            g = sum_prim(g, axis=axes, keepdims=False)
        if not same_at_every_size(g.shape, shape):
            g = reshape(g, shape=tuple(shape))
    if g.dtype != like.dtype:
        if like.dtype.kind not in "fc":
            return None
        from .elementwise import cast
        g = cast(g, dtype=like.dtype)
    return g
