"""kiln.gluon.rnn: recurrent layers (RNN, LSTM, GRU) and cells, as MXNet Gluon's."""
from .rnn_layer import RNN, LSTM, GRU  # noqa: F401
from .rnn_cell import (RecurrentCell, HybridRecurrentCell, RNNCell, LSTMCell,  # noqa: F401
                       GRUCell, SequentialRNNCell, HybridSequentialRNNCell, DropoutCell)
from .container_cells import (ModifierCell, ResidualCell, ZoneoutCell,  # noqa: F401
                              BidirectionalCell)
