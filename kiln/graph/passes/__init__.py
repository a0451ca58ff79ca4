"""The optimization pipeline. Each pass is a small Graph -> Graph function in its own file.

KILN_DEBUG=1 prints the graph after every pass.
"""
import os
import sys

from .dce import eliminate_dead_code
from .fold import fold_constants
from .cse import eliminate_common_subexpressions
from .simplify import simplify
from .gather_pieces import gather_pieces
from .scan_grad_window import scan_grad_window
from .fuse import group_elementwise
from .memory import plan_memory, MemoryPlan  # noqa: F401

PIPELINE = (
    ("dead-code elimination", eliminate_dead_code),
    ("constant folding", fold_constants),
    ("common-subexpression elimination", eliminate_common_subexpressions),
    ("algebraic simplification", simplify),
    ("slice gradients gathered", gather_pieces),
    ("scan gradients windowed", scan_grad_window),
    ("dead-code elimination", eliminate_dead_code),
)


def debug_level():
    try:
        return int(os.environ.get("KILN_DEBUG", "0") or 0)
    except ValueError:
        return 0


def optimize(graph, passes=PIPELINE):
    """Run the value-preserving passes, then record fusion groups."""
    verbose = debug_level() >= 1
    if verbose:
        print(f"[kiln] traced {graph.name}:\n{graph}", file=sys.stderr)
    for title, run in passes:
        graph = run(graph)
        if verbose:
            print(f"[kiln] after {title}:\n{graph}", file=sys.stderr)
    graph = group_elementwise(graph)
    if verbose and graph.fusion_groups:
        groups = ["[" + ", ".join(n.op for n in g) + "]" for g in graph.fusion_groups]
        print(f"[kiln] fusion groups: {' '.join(groups)}", file=sys.stderr)
    return graph
