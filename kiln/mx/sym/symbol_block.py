"""A SymbolBlock over a user Symbol: MXNet's `SymbolBlock(outputs, inputs)` and what
`SymbolBlock.imports` gives for a file written by real MXNet.

Every argument of the symbol that is not an input becomes a Parameter named as in the
file ('dense0_weight'); auxiliary states (BatchNorm's moving statistics) are Parameters
with grad_req 'null'. forward() walks the symbol with kiln's functions (evaluation.evaluate),
so the block runs eagerly, trains under autograd, and hybridizes into kiln's graph IR.
Parameter shapes come from the params file, or are inferred from the first input.
"""
from collections import OrderedDict

from ..._core.base import KilnError, where_in_user_code
from ..._core.ndarray import ndarray
from ...gluon.block import HybridBlock
from ...gluon.parameter import Parameter
from ...gluon import symbol_block
from ...gluon.symbol_block import SymbolBlock
from .evaluation import evaluate, _as_array, infer_shape, check_sizes
from .symbol import Group, Symbol, STORAGE_TYPE_IDS
from . import serialization
from .mxnet_json import is_mxnet_text, read_text


def _input_names(inputs):
    if inputs is None:
        return None
    if isinstance(inputs, (str, Symbol)):
        inputs = [inputs]
    names = []
    for item in inputs:
        if isinstance(item, Symbol):
            names.extend(item.list_outputs() if not item._heads[0][0].is_var
                         else [item.name])
        else:
            names.append(item)
    return names


class MXSymbolBlock(SymbolBlock):
    def __init__(self, outputs, inputs=None, params=None):
        HybridBlock.__init__(self)
        if isinstance(outputs, (list, tuple)):
            outputs = Group(list(outputs))
        if not isinstance(outputs, Symbol):
            raise KilnError(f"SymbolBlock: outputs must be a Symbol, got "
                            f"{type(outputs).__name__}" + where_in_user_code())
        args = outputs.list_arguments()
        names = _input_names(inputs) or [a for a in args if a == "data"] or args[:1]
        for n in names:
            if n not in args:
                raise KilnError(f"SymbolBlock: input {n!r} is not an argument of the symbol "
                                f"({args})" + where_in_user_code())
        for node in outputs.get_internals():   # MXNet 1.x's error (an AssertionError there)
            if node.attr("__storage_type__") == str(STORAGE_TYPE_IDS["row_sparse"]):
                raise AssertionError(f"SymbolBlock doesn't support Parameter '{node.name}' "
                                     f"because its storage type is 'row_sparse'.")
        object.__setattr__(self, "_sym", outputs)
        object.__setattr__(self, "_inputs", list(names))
        aux = outputs.list_auxiliary_states()
        shared = params or {}
        for name in [a for a in args if a not in names] + aux:
            param = shared.get(name) if hasattr(shared, "get") else None
            if param is None:
                param = Parameter(name, grad_req="null" if name in aux else "write",
                                  shape=None, allow_deferred_init=True)
            OrderedDict.__setitem__(self._reg_params, name, param)

    def load_parameters(self, filename, ctx=None, allow_missing=False, ignore_extra=False,
                        cast_dtype=False, dtype_source="current"):
        from ..mod.params import read_entries, split_prefixed
        args, aux = split_prefixed(read_entries(filename), set(), str(filename))
        entries = {**args, **aux}
        entries = {k: v for k, v in entries.items() if not k.startswith("__const__.")
                   or k in self._reg_params}
        missing = [n for n in self._reg_params if n not in entries]
        extra = [n for n in entries if n not in self._reg_params]
        if (missing and not allow_missing) or (extra and not ignore_extra):
            raise KilnError(f"SymbolBlock: {filename} does not match the symbol: missing "
                            f"{missing[:8]}, unexpected {extra[:8]}" + where_in_user_code())
        for name, value in entries.items():
            if name in self._reg_params:
                self._reg_params[name]._load_init(value._data, cast_dtype=cast_dtype,
                                                  source=str(filename))

    def _infer_param_shapes(self, args):
        pending = [p for p in self._reg_params.values() if p._data is None]
        if not pending:
            return
        arg_shapes, _, aux_shapes = infer_shape(
            self._sym, **{n: tuple(a.shape) for n, a in zip(self._inputs, args)})
        if arg_shapes is None:
            return
        shapes = dict(zip(self._sym.list_arguments(), arg_shapes))
        shapes.update(zip(self._sym.list_auxiliary_states(), aux_shapes))
        for name, p in self._reg_params.items():
            if p._data is None:
                p.shape = shapes[name]

    def forward(self, *args):
        if len(args) != len(self._inputs):
            raise KilnError(f"SymbolBlock: expected {len(self._inputs)} inputs "
                            f"({', '.join(self._inputs)}), got {len(args)}"
                            + where_in_user_code())
        args = [a if isinstance(a, ndarray) else _as_array(a, n)
                for a, n in zip(args, self._inputs)]
        self._infer_param_shapes(args)
        values = dict(zip(self._inputs, args))
        params = self._reg_params
        check_sizes(self._sym, dict(values, **{n: p.data() for n, p in params.items()}))

        def feed(node):
            if node.name in values:
                return values[node.name]
            return params[node.name].data()
        outs = evaluate(self._sym._heads, feed)
        return outs[0] if len(outs) == 1 else outs

    def __repr__(self):
        return (f"SymbolBlock(MXNet symbol: inputs {self._inputs}, outputs "
                f"{self._sym.list_outputs()}, {len(self._reg_params)} parameters)")


def _is_symbol(value):
    return isinstance(value, Symbol) or (isinstance(value, (list, tuple)) and value
                                         and isinstance(value[0], Symbol))


def _load_mxnet_file(symbol_file, input_names):
    return MXSymbolBlock(serialization.load(symbol_file), input_names)


symbol_block.register_symbol_kind(Symbol, _is_symbol, MXSymbolBlock)
symbol_block.register_file_format(lambda path: is_mxnet_text(read_text(path)), _load_mxnet_file)
