"""`sym.sparse` (MXNet 1.x's sparse symbol namespace). kiln's Symbols compute on dense
values, so each name here is the `sym` function of the same name; sparse arrays bound to
such a symbol run on dense copies (kiln/mx/nd/sparse says so once in a warning)."""
from ..f_namespace import namespace_attr


def __getattr__(name):
    return namespace_attr("kiln.mx.sym", name)
