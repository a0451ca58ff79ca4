"""MXNet's `mx.engine`: operator bulking knobs.

MXNet's engine can run several consecutive operators as one scheduled unit ("bulking").
kiln runs eagerly op by op, and hybridized blocks already compile to one program, so
bulking has nothing to change; the size is remembered so code that sets and restores it
works unchanged.
"""
import contextlib

from .._core.base import KilnError

_bulk_size = [15]    # MXNet's default MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_FWD


def set_bulk_size(size):
    """Set the bulk size; returns the previous one. Has no effect on how kiln runs."""
    if not isinstance(size, int) or size < 0:
        raise KilnError(f"engine.set_bulk_size: expected a non-negative int, got {size!r}")
    previous, _bulk_size[0] = _bulk_size[0], size
    return previous


@contextlib.contextmanager
def bulk(size):
    """`with mx.engine.bulk(10):` -- sets the bulk size for the block, then restores it."""
    previous = set_bulk_size(size)
    try:
        yield
    finally:
        set_bulk_size(previous)
