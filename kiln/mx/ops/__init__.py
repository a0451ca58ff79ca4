"""MXNet 1.x operators by their MXNet names, mapped onto kiln's own functions.

Each entry of the table (table.py) says which named inputs an MXNet op takes (and which of
them are auxiliary states), how to parse its attributes, and which kiln function computes
it. Nothing here is a new kernel: every op is a composition of registry primitives through
kiln.np / kiln.npx, so the same entry runs eagerly, records gradients, and traces into a
graph. `kiln.nd.FullyConnected`, `kiln.sym.FullyConnected` and the nodes of a loaded MXNet
symbol file all resolve here.

The topic modules register their entries when imported: layers, losses (output layers),
tensor (arithmetic, reductions, shapes), math, sequence, indexing, windows, amp, ctc,
spatial_transformer, rnn, deformable, image, unary and ordering.
"""
from .table import OPS, MXOp, find, lookup, parse_attr, _DTYPE_FLAGS  # noqa: F401
from . import layers, losses, tensor, math, sequence, indexing, windows, amp  # noqa: F401
from . import ctc, spatial_transformer, rnn, deformable, image, unary, ordering  # noqa: F401
from . import partial_shapes  # noqa: F401  (after the ops it gives rules to)
