"""MXNet 1.x's `mx.rnn`: the data side of its bucketing language-model examples
(`encode_sentences`, `BucketSentenceIter`) and the symbolic cells they unroll (LSTMCell,
SequentialRNNCell: rnn_cell.py). The other symbolic cells are not in kiln; Gluon's
`gluon.rnn` layers and cells are (and hybridize to one compiled time loop)."""
from ..._core.base import KilnError
from .io import BucketSentenceIter, encode_sentences  # noqa: F401
from .rnn_cell import BaseRNNCell, LSTMCell, RNNParams, SequentialRNNCell  # noqa: F401

_CELLS = ("RNNCell", "GRUCell", "FusedRNNCell", "BidirectionalCell", "DropoutCell",
          "ZoneoutCell", "ResidualCell", "ModifierCell", "ConvRNNCell", "ConvLSTMCell",
          "ConvGRUCell", "save_rnn_checkpoint", "load_rnn_checkpoint", "do_rnn_checkpoint",
          "rnn_unroll")


def __getattr__(name):
    if name in _CELLS:
        raise KilnError(f"mx.rnn.{name}: of MXNet 1.x's symbolic RNN cells kiln has "
                        "LSTMCell and SequentialRNNCell; use gluon.rnn (RNN/LSTM/GRU layers "
                        "and cells, which hybridize to one compiled time loop)")
    raise AttributeError(f"module 'kiln.rnn' has no attribute {name!r}")
