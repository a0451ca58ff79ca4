"""`F` in hybrid_forward(F, x) is this module while hybridize traces.

It exposes the same functions as kiln.ndarray (F.relu, F.np.sum, F.npx.relu); they are the
very same registry-backed functions, which build graph nodes when given symbolic arrays.
"""
from .f_namespace import namespace_attr


def __getattr__(name):
    return namespace_attr(__name__, name)
