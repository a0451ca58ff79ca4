"""kiln.gluon.rnn: recurrent layers (RNN, LSTM, GRU) and cells, as MXNet Gluon's."""
from .rnn_layer import RNN, LSTM, GRU  # noqa: F401
