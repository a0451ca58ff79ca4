"""Graph -> Graph passes, one file each; pipeline.py runs them in the orders kiln uses.

KILN_DEBUG=1 prints the graph after every pass. (A pass whose function has its module's
name, simplify.simplify, is not re-exported here: the package attribute stays the module.)
"""
from .dce import eliminate_dead_code  # noqa: F401
from .fold import fold_constants  # noqa: F401
from .cse import eliminate_common_subexpressions  # noqa: F401
from .fuse import group_elementwise  # noqa: F401
from .memory import plan_memory, MemoryPlan  # noqa: F401
from .pipeline import run_pipeline, debug_level  # noqa: F401
