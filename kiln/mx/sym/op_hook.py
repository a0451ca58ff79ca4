"""HybridBlock.register_op_hook: a hybridized block with an op hook runs op by op through
its MXNet symbol (layer_symbols.py), and the hook sees each op's inputs (monitor_all) and
outputs under MXNet's names: `{node}_{input name}`, `{node}_output`, with the op's name."""
from ...gluon.hybrid_inputs import register_op_hook_runner
from .evaluation import evaluate
from .executor import _monitor_input_name
from .symbol import BLOCK_OP


def run_with_op_hook(block, args, callback, monitor_all):
    from . import var
    names = ["data"] if len(args) == 1 else [f"data{k}" for k in range(len(args))]
    symbol = block(*[var(n) for n in names])
    if any(node.op == BLOCK_OP and node.attrs["block"] is block for node, _ in symbol._heads):
        # no MXNet ops to hook into: the block runs as it would without the hook
        hook = block.__dict__.pop("_op_hook")
        try:
            return block(*args)
        finally:
            object.__setattr__(block, "_op_hook", hook)
    values = dict(zip(names, args))
    params = block.collect_params()
    if any(p._data is None for p in params.values()):    # deferred: shapes from the inputs
        args_shapes, _, aux_shapes = symbol.infer_shape(**{n: a.shape for n, a in
                                                           values.items()})
        shapes = dict(zip(symbol.list_arguments(), args_shapes))
        shapes.update(zip(symbol.list_auxiliary_states(), aux_shapes))
        for name, p in params.items():
            if p._data is None and name in shapes:
                p.shape = shapes[name]
                p._finish_deferred_init()
    values.update((name, p.data()) for name, p in params.items())

    def observe(node, inputs, outputs):
        op = str(node.op).encode()
        if monitor_all:
            for k, array in enumerate(inputs):
                callback(f"{node.name}_{_monitor_input_name(node, k)}".encode(), op, array)
        for k, array in enumerate(outputs):
            suffix = str(k) if len(outputs) > 1 else ""
            callback(f"{node.name}_output{suffix}".encode(), op, array)

    outs = evaluate(symbol._heads, lambda node: values[node.name], observe)
    return outs[0] if len(outs) == 1 else outs


register_op_hook_runner(run_with_op_hook)
