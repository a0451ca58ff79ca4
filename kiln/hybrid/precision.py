"""Which precision pipeline (mixed precision, int8; graph/passes/pipeline.py) runs on the
graphs a hybridized block or function traces: the block's own (set_precision_pipeline in
cached.py, by kiln.contrib.amp and quantization), amp.init's default for every block, or,
for a function that calls hybridized blocks (a compiled training step), theirs."""
from .._core import dispatch, trace
from .._core.base import KilnError, where_in_user_code
from ..graph.passes import amp as amp_pass
from ..graph.passes.pipeline import run_pipeline

_default_precision = [None]      # amp.init's: (pipeline name, options) for every block


def precision_of(block):
    """The (pipeline name, options) `block` runs on its traced graphs, or None."""
    return block.__dict__.get("_kiln_precision", _default_precision[0])


def note_precision_in_trace(block):
    """A hybridized block called inside another function's trace (a compiled training step)
    tells that trace its precision pipeline, which then runs over the traced graph."""
    precision = precision_of(block)
    ctx = trace.current()
    if precision is not None and ctx is not None and precision not in ctx.precisions:
        ctx.precisions.append(precision)


def set_default_precision_pipeline(name, **options):
    """set_precision_pipeline for every block that is hybridized from now on; mixed
    precision (amp-bfloat16) runs eager code's matmuls and convolutions in bfloat16 too, as
    MXNet's amp.init does (graph/passes/amp.py's eager_substitute)."""
    _default_precision[0] = None if name is None else (name, dict(options))
    eager = None
    if name == "amp-bfloat16":
        allow = options.get("amp_allow", amp_pass.DEFAULT_ALLOW)
        eager = amp_pass.eager_substitute(allow, options.get("amp_deny", ()))
    dispatch.set_eager_substitute(eager)


def run_precision(own, graph, called, name):
    """`graph` through the pipeline `own` ((name, options) or None), or else through the one
    the blocks the trace called share (`called`); several different ones are refused."""
    precision = own
    if precision is None and called:
        if any(p != called[0] for p in called):
            raise KilnError(f"{name}: the blocks it calls have different precision pipelines "
                            f"({', '.join(sorted({p[0] for p in called}))}); one compiled "
                            "program runs one: convert the whole net "
                            "(amp.convert_hybrid_block on the outermost block)"
                            + where_in_user_code())
        precision = called[0]
    if precision is None:
        return graph
    pipeline, options = precision
    return run_pipeline(pipeline, graph, **options)
