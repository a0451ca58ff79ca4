"""MXNet 1.x's `nd.CachedOp`: a Symbol called as a function of arrays, its inputs in
`list_inputs()` order. kiln runs the symbol's nodes eagerly (evaluate_eager), so autograd
records through it like any nd call."""
from ..._core.base import KilnError, where_in_user_code


class CachedOp:
    """`CachedOp(sym)(*arrays, out=None)`: the symbol's outputs for those input arrays (one
    array for a single output, else a list); `out=` receives them instead."""

    def __init__(self, sym, flags=()):
        self._symbol = sym
        self._inputs = sym.list_inputs()
        self.flags = tuple(flags)       # MXNet's static_alloc/... switches: nothing to tune

    def __call__(self, *args, out=None, **_):
        from ..sym.evaluation import evaluate_eager
        if len(args) != len(self._inputs):
            raise KilnError(f"CachedOp: the symbol takes {len(self._inputs)} inputs "
                            f"{self._inputs}, got {len(args)} arrays" + where_in_user_code())
        outputs = list(evaluate_eager(self._symbol, dict(zip(self._inputs, args))))
        if out is None:
            return outputs[0] if len(outputs) == 1 else outputs
        targets = list(out) if isinstance(out, (list, tuple)) else [out]
        if len(targets) != len(outputs):
            raise KilnError(f"CachedOp: out= has {len(targets)} arrays for "
                            f"{len(outputs)} outputs" + where_in_user_code())
        for target, value in zip(targets, outputs):
            target[...] = value
        return out
