"""MXNet's gluon.contrib: the layers of `gluon.contrib.nn`."""
from . import nn  # noqa: F401
