"""`sym.sparse` (MXNet 1.x's sparse symbol namespace). kiln's Symbols compute on dense
values, so each name here is the `sym` function of the same name; sparse arrays bound to
such a symbol run on dense copies (kiln/mx/nd/sparse says so once in a warning)."""
import sys


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(sys.modules["kiln.mx.sym"], name)
