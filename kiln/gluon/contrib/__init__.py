"""MXNet's gluon.contrib: nn layers, rnn cells, cnn layers, data samplers and the
estimator."""
from . import nn, rnn, cnn, data  # noqa: F401
