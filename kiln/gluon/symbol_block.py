"""SymbolBlock: run an exported graph with no Python class of the original model.

The block is an interpreter over the symbol file's nodes: each one is evaluated by calling
its registry primitive, `REGISTRY[op](*inputs, **attrs)`, through kiln's normal dispatch.
So the same code runs eagerly, records gradients under autograd.record(), and, once
hybridized, is traced into a fresh graph made of the very same ops. Parameters are
ordinary Parameters named by the file's structural names, so Trainer fine-tunes them and
save_parameters/load_parameters use the same names as the original model.

Nothing from the file is executed as code: ops are looked up in the registry by name, and
attributes are typed JSON values validated against each op's shape rule at load time.

A file with symbolic sizes (format version 2) serves every input size its guards accept:
a call binds the symbols to its input sizes, checks each guard (a KilnError names the one
that fails and the line that recorded it), and evaluates the size-valued attributes and
the expected shapes for those sizes. Inside a trace the sizes may be symbols themselves, so
the same code makes a symbolic program when the block is hybridized.
"""
import operator

from collections import OrderedDict

import numpy as _np

from .._core.base import KilnError, where_in_user_code
from .._core.ndarray import ndarray
from .._core.symdim import SymInt, concrete_value, mentions_symbolic
from ..npx.io import read_npz
from ..ops.registry import REGISTRY
from .block import HybridBlock
from .parameter import Parameter


# Other kinds of symbol a SymbolBlock can be built from, registered by the layer that
# defines them (kiln/mx/sym/symbol_block.py: MXNet 1.x Symbols and MXNet's symbol files),
# since gluon sits below that layer: (symbol class, accepts(first argument), block class)
# and (recognizes(path), load(path, input_names)).
_SYMBOL_KINDS = []
_FILE_FORMATS = []


def register_symbol_kind(symbol_class, accepts, block_class):
    """`SymbolBlock(outputs, ...)` with outputs accepted by `accepts` builds `block_class`."""
    _SYMBOL_KINDS.append((symbol_class, accepts, block_class))


def register_file_format(recognizes, load):
    """`SymbolBlock.imports(path, ...)` of a file `recognizes(path)` says yes to is `load`'s."""
    _FILE_FORMATS.append((recognizes, load))


def symbol_types():
    """The registered symbol classes (gluon.tensor_types lists them with the array)."""
    return tuple(kind[0] for kind in _SYMBOL_KINDS)


class SymbolBlock(HybridBlock):
    """A HybridBlock built from a symbol (see `SymbolBlock.imports`)."""

    def __new__(cls, *args, **kwargs):
        first = args[0] if args else kwargs.get("outputs")
        if cls is SymbolBlock:
            for _, accepts, block_class in _SYMBOL_KINDS:
                if accepts(first):
                    return super().__new__(block_class)
        return super().__new__(cls)

    def __init__(self, symbol, input_names=None):
        super().__init__()
        object.__setattr__(self, "_symbol", symbol)
        names = symbol.input_names
        if input_names is None:
            input_names = names
        if isinstance(input_names, str):
            input_names = [input_names]
        input_names = list(input_names)
        if sorted(input_names) != sorted(names):
            raise KilnError(f"SymbolBlock: input_names {input_names} do not match the "
                            f"symbol's inputs {names}{where_in_user_code()}")
        # forward's arguments come in the order the caller named them
        by_name = {symbol.nodes[k].name: k for k in symbol.inputs}
        object.__setattr__(self, "_input_nodes", [by_name[n] for n in input_names])
        object.__setattr__(self, "_consts", {})
        for _, spec in symbol.params:
            param = Parameter(spec.name, shape=spec.shape, dtype=spec.dtype,
                              grad_req=spec.grad_req, allow_deferred_init=False)
            OrderedDict.__setitem__(self._reg_params, spec.name, param)

    @staticmethod
    def imports(symbol_file, input_names, param_file=None, ctx=None, allow_missing=False,
                ignore_extra=False):
        """Load `symbol_file` (and its parameters) as a block; no model class needed.
        Files written by MXNet itself load too (kiln/mx/sym/symbol_block.py)."""
        from ..export.symbol import read_symbol
        for recognizes, load in _FILE_FORMATS:
            if recognizes(symbol_file):
                block = load(symbol_file, input_names)
                break
        else:
            block = SymbolBlock(read_symbol(symbol_file), input_names)
        if param_file is not None:
            block.load_parameters(param_file, allow_missing=allow_missing,
                                  ignore_extra=ignore_extra)
        return block

    def load_parameters(self, filename, ctx=None, allow_missing=False, ignore_extra=False,
                        cast_dtype=False, dtype_source="current"):
        """Parameters and the graph's constants, checked against the symbol's shapes/dtypes."""
        from ..export.params import match_params
        entries = read_npz(filename, "SymbolBlock.load_parameters")
        params, consts = match_params(self._symbol, entries, str(filename), allow_missing,
                                      ignore_extra)
        for name, value in params.items():
            self._reg_params[name]._load_init(value, source=str(filename))
        for k, value in consts.items():
            self._consts[k] = ndarray._wrap(value)

    def forward(self, *args):
        sym = self._symbol
        if len(args) != len(self._input_nodes):
            raise KilnError(f"SymbolBlock: expected {len(self._input_nodes)} inputs "
                            f"({', '.join(sym.nodes[k].name for k in self._input_nodes)}), "
                            f"got {len(args)}{where_in_user_code()}")
        values = [None] * len(sym.nodes)
        bindings = {} if sym.shape_env is not None else None
        for k, arg in zip(self._input_nodes, args):
            spec = sym.nodes[k]
            if not isinstance(arg, ndarray):
                arg = ndarray._wrap(_np.asarray(arg, dtype=spec.dtype))
            if not _fits(spec.shape, tuple(arg.shape), bindings) or arg.dtype != spec.dtype:
                raise KilnError(f"SymbolBlock: input {spec.name!r} must be {spec.dtype}"
                                f"{list(spec.shape)} (the exported signature), got "
                                f"{arg.dtype}{list(arg.shape)}{where_in_user_code()}")
            values[k] = arg
        if bindings is not None:
            _check_guards(sym.shape_env, bindings)
        # free each value after its last reader, so peak memory follows the graph's width
        last_use = {}
        for k, spec in enumerate(sym.nodes):
            for i in spec.inputs:
                last_use[i] = k
        keep = set(sym.outputs)
        for k, spec in enumerate(sym.nodes):
            if spec.op == "input":
                continue
            if spec.op == "param":
                values[k] = self._reg_params[spec.name].data()
            elif spec.op == "const":
                if k not in self._consts:
                    raise KilnError(f"SymbolBlock: constant {spec.name} has no value; load "
                                    f"the params file first{where_in_user_code()}")
                values[k] = self._consts[k]
            else:
                values[k] = _evaluate(k, spec, [values[i] for i in spec.inputs], bindings)
            for i in spec.inputs:
                if last_use.get(i) == k and i not in keep:
                    values[i] = None
        outs = [values[k] for k in sym.outputs]
        return outs[0] if len(outs) == 1 else outs

    def __repr__(self):
        sym = self._symbol
        return (f"SymbolBlock({sym.name}: inputs {sym.input_names}, "
                f"{len(sym.nodes)} nodes, {len(sym.params)} parameters)")


def _fits(shape, got, bindings):
    """Whether an input's shape `got` fits the file's `shape`; its symbols are bound into
    `bindings` (a symbol met twice must have one size)."""
    if len(shape) != len(got):
        return False
    for dim, size in zip(shape, got):
        if isinstance(dim, SymInt):
            name = dim.expr[1]
            if name not in bindings:
                bindings[name] = size
            elif not _same(bindings[name], size):
                return False
        elif not _same(dim, size):
            return False
    return True


def _same(a, b):
    return a is b or a == b     # in a trace, a comparison of symbolic sizes is a guard


_COMPARE = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
            ">": operator.gt, ">=": operator.ge}


def _check_guards(env, bindings):
    for guard in env.guards:
        try:
            lhs = SymInt(guard.lhs, 0).evaluate(bindings)
            rhs = SymInt(guard.rhs, 0).evaluate(bindings)
            holds = bool(_COMPARE[guard.op](lhs, rhs)) == guard.outcome
        except ZeroDivisionError:
            holds = False
        if not holds:
            sizes = ", ".join(f"{k}={v}" for k, v in sorted(bindings.items()))
            raise KilnError(f"SymbolBlock: the exported model does not serve the sizes "
                            f"{sizes}: its guard {guard!r} does not hold (the trace relied "
                            f"on it there){where_in_user_code()}")


def _evaluate(k, spec, inputs, bindings=None):
    attrs, shape = spec.attrs, spec.shape
    if bindings is not None:
        try:
            if mentions_symbolic(attrs):
                attrs = concrete_value(attrs, bindings)
            shape = tuple(concrete_value(shape, bindings))
        except ZeroDivisionError:
            raise KilnError(f"SymbolBlock: node {k} ({spec.op}): a size divides by zero for "
                            f"the sizes {bindings}{where_in_user_code()}") from None
    try:
        out = REGISTRY[spec.op](*inputs, **attrs)
    except KilnError:
        raise
    except Exception as exc:  # a validated file can still hold values an op rejects
        raise KilnError(f"SymbolBlock: node {k} ({spec.op}) failed: "
                        f"{type(exc).__name__}: {exc}") from None
    if len(out.shape) != len(shape) or not all(_same(a, b) for a, b in zip(out.shape, shape)) \
            or out.dtype != spec.dtype:
        raise KilnError(f"SymbolBlock: node {k} ({spec.op}) gave {out.dtype}"
                        f"{list(out.shape)}, the file declares {spec.dtype}{list(shape)}")
    return out
