"""MXNet's gluon.contrib: nn layers, rnn cells, data samplers and the estimator."""
from . import nn, rnn, data  # noqa: F401
