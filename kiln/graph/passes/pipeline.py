"""Every pass pipeline kiln runs, each defined once, here, as an ordered list of named steps.

A caller names a pipeline: `run_pipeline("generic", graph)`; nobody else calls passes in
order. The pipelines:

  generic          the value-preserving passes, then elementwise fusion groups: every graph
                   a backend compiles (a traced graph, both halves of a training step, the
                   subgraphs of control flow) goes through it
  pruned-backward  a backward graph whose absent incoming gradients are zeros
                   (zero_cotangents.py), then generic
  c-program        the C backend, before generating a program: heavy ops without a kernel
                   expanded, attention written out fused into its op, then layer norm and
                   the softmax family, channels-last between
                   the heavy ops with a kernel, conv epilogues fused
  c-joint-layout   the C backend's channels-last layout on a traced forward+backward graph,
                   before it is split into two programs (graph/split.py)
  standalone-c     export's standalone C: no kernel library, so every heavy op expanded
  onnx             ONNX export: the heavy ops without an ONNX op expanded
  amp-bfloat16     mixed precision (kiln.contrib.amp): the matmul family in bfloat16, on
                   a traced graph before generic (options `amp_allow`, `amp_deny`)
  int8             quantization (kiln.contrib.quantization): calibrated layers in int8, on
                   a traced graph before generic (option `int8_layers`)

A pipeline lists Steps and, by name, other pipelines run whole. A step with `then` runs that
pipeline after it, when it changed the graph. Options are run_pipeline's keyword arguments:
`takes` (a predicate: the heavy nodes the target runs itself, as kernels or ONNX ops; they
are kept whole, laid out and fused), `cotangents` and `absent` (pruned-backward's inputs),
`amp_allow` and `amp_deny` (amp-bfloat16's op lists), `int8_layers` (int8's layers).

Passes are looked up in their modules when they run, so a test can stand in for one.
KILN_DEBUG=1 prints the graph when a pipeline starts and after every step.
"""
import os
import sys

from . import (amp, attention, conv_epilogue, cse, dce, expand_heavy, fold, fuse, gather_pieces,
               layout, normalization, quantize, scan_grad_shared_sums, scan_grad_window, simplify,
               zero_cotangents)


class Step:
    """One pass: its title, its module and function, the options it takes (its parameter
    name -> the option's name), and the pipeline to run after it when it changed the graph."""

    def __init__(self, title, module, function, options=None, then=None):
        self.title, self.module, self.function = title, module, function
        self.options = options or {}
        self.then = then

    def __call__(self, graph, options):
        given = {param: options[name] for param, name in self.options.items()
                 if name in options}
        return getattr(self.module, self.function)(graph, **given)

    def show(self, graph):
        """What KILN_DEBUG=1 prints after the step."""
        return f"[kiln] after {self.title}:\n{graph}"


class FusionStep(Step):
    """Fusion records groups and leaves the nodes as they are: it shows the groups."""

    def show(self, graph):
        if not graph.fusion_groups:
            return None
        groups = ["[" + ", ".join(n.op for n in g) + "]" for g in graph.fusion_groups]
        return f"[kiln] fusion groups: {' '.join(groups)}"


DEAD_CODE = Step("dead-code elimination", dce, "eliminate_dead_code")
EXPAND_HEAVY = Step("heavy ops expanded into their decompositions",
                    expand_heavy, "expand_heavy_ops", {"keep": "takes"})
CHANNELS_LAST = Step("channels-last layout", layout, "channels_last_where_it_pays",
                     {"takes": "takes"}, then="generic")

PIPELINES = {
    "generic": (
        DEAD_CODE,
        Step("constant folding", fold, "fold_constants"),
        Step("common-subexpression elimination", cse, "eliminate_common_subexpressions"),
        Step("algebraic simplification", simplify, "simplify"),
        Step("slice gradients gathered", gather_pieces, "gather_pieces"),
        Step("scan gradients windowed", scan_grad_window, "scan_grad_window"),
        Step("scan gradient column sums shared", scan_grad_shared_sums,
             "scan_grad_shared_sums"),
        DEAD_CODE,
        FusionStep("elementwise fusion groups", fuse, "group_elementwise"),
    ),
    "pruned-backward": (
        Step("absent gradients pruned to zeros", zero_cotangents, "prune_zero_cotangents",
             {"cotangents": "cotangents", "absent": "absent"}),
        "generic",
    ),
    "c-program": (
        Step("heavy ops without a kernel expanded", expand_heavy, "expand_heavy_ops",
             {"keep": "takes"}, then="generic"),
        Step("attention fused", attention, "fuse_attention", then="generic"),
        Step("layer norm and softmax fused", normalization, "fuse_normalization",
             then="generic"),
        CHANNELS_LAST,
        Step("conv epilogues fused", conv_epilogue, "fuse_conv_epilogues", {"takes": "takes"},
             then="generic"),
    ),
    "c-joint-layout": (CHANNELS_LAST,),
    "standalone-c": (EXPAND_HEAVY, "generic"),
    "onnx": (EXPAND_HEAVY,),
    "amp-bfloat16": (
        Step("bfloat16 mixed precision", amp, "to_bfloat16",
             {"allow": "amp_allow", "deny": "amp_deny"}),
    ),
    "int8": (Step("int8 quantization", quantize, "quantize_layers", {"layers": "int8_layers"}),),
}


def debug_level():
    try:
        return int(os.environ.get("KILN_DEBUG", "0") or 0)
    except ValueError:
        return 0


def run_pipeline(name, graph, **options):
    """`graph` after the pipeline `name` (see the module docstring for the names)."""
    verbose = debug_level() >= 1
    if verbose:
        print(f"[kiln] {name} pipeline on {graph.name}:\n{graph}", file=sys.stderr)
    for step in PIPELINES[name]:
        if isinstance(step, str):
            graph = run_pipeline(step, graph, **options)
            continue
        before = graph
        graph = step(graph, options)
        if verbose:
            text = step.show(graph)
            if text is not None:
                print(text, file=sys.stderr)
        if step.then is not None and graph is not before:
            graph = run_pipeline(step.then, graph, **options)
    return graph
