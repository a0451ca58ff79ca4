"""MXNet 1.x's `mx.rnn`: the data side of its bucketing language-model examples
(`encode_sentences`, `BucketSentenceIter`) and the symbolic cells (rnn_cell.py, and
FusedRNNCell in fused_cell.py); gluon_symbolic.py runs Gluon's cells on Symbols. The
modifier and convolutional symbolic cells are not in kiln; Gluon's `gluon.rnn` layers and
cells are (and hybridize to one compiled time loop)."""
from ..._core.base import KilnError
from .io import BucketSentenceIter, encode_sentences  # noqa: F401
from .fused_cell import FusedRNNCell  # noqa: F401
from .rnn_cell import (BaseRNNCell, BidirectionalCell, DropoutCell, GRUCell,  # noqa: F401
                       LSTMCell, RNNCell, RNNParams, SequentialRNNCell)

_CELLS = ("ZoneoutCell", "ResidualCell", "ModifierCell", "ConvRNNCell", "ConvLSTMCell",
          "ConvGRUCell", "save_rnn_checkpoint", "load_rnn_checkpoint", "do_rnn_checkpoint",
          "rnn_unroll")


def __getattr__(name):
    if name in _CELLS:
        raise KilnError(f"mx.rnn.{name}: of MXNet 1.x's symbolic RNN cells kiln has "
                        "RNNCell, LSTMCell, GRUCell, FusedRNNCell, SequentialRNNCell, "
                        "BidirectionalCell and DropoutCell; use gluon.rnn (RNN/LSTM/GRU layers "
                        "and cells, which hybridize to one compiled time loop)")
    raise AttributeError(f"module 'kiln.rnn' has no attribute {name!r}")
