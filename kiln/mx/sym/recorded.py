"""`autograd.get_symbol(x)` (MXNet 1.x): the computation recorded on the autograd tape for `x`,
as a Symbol, registered into kiln/_core/autograd.py.

As MXNet names them: an array with attach_grad() is a variable `var<k>`, another array an
op read is a variable `null<k>`, each op a node `node_<k>`. A recorded primitive is a
node of that kiln primitive with its attributes (so the symbol evaluates as the recorded
code did); a Python scalar the op read is kept in the symbol as a constant, as MXNet keeps
it in a `_*_scalar` op's attributes. A recorded function without a primitive (a hybridized
block's compiled program, an autograd.Function) is a node of its name, which shows the
graph's structure but cannot be evaluated."""
import numpy as _np

from ..._core import autograd
from ..._core.base import postorder
from .symbol import KILN_PREFIX, Symbol, SymNode


def _entries(head):
    return postorder([head], lambda n: [r[0] for r in n.in_refs if r is not None])


def symbol_of_tape(x):
    """The Symbol of the tape entries `x` was computed by."""
    made = {}
    counters = {"var": 0, "node": 0, "scalar": 0}

    def variable(prefix):
        name = f"{prefix}{counters['var']}"
        counters["var"] += 1
        return SymNode(None, name)

    for entry in _entries(x._tape):
        if isinstance(entry, autograd.Leaf):
            made[id(entry)] = variable("var")
            continue
        inputs = []
        saved = entry.saved_in or (None,) * len(entry.in_refs)
        for ref, value in zip(entry.in_refs, saved):
            if ref is not None:
                inputs.append((made[id(ref[0])], ref[1]))
            elif value is not None and value.ndim == 0 and value._node is None:
                inputs.append((SymNode("_kiln_constant", f"scalar{counters['scalar']}", attrs={
                    "value": _np.asarray(value._data).tolist(), "shape": ()}), 0))
                counters["scalar"] += 1
            else:
                inputs.append((variable("null"), 0))
        made[id(entry)] = SymNode(KILN_PREFIX + entry.name, f"node_{counters['node']}", inputs,
                                  attrs=entry.attrs, num_outputs=len(entry.out_avals))
        counters["node"] += 1
    return Symbol([(made[id(x._tape)], x._tidx)])


autograd.SYMBOL_OF_TAPE[0] = symbol_of_tape
