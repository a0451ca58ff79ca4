"""MXNet 1.x's `mx.rnn`: the data side of its bucketing language-model examples
(`encode_sentences`, `BucketSentenceIter`). Its symbolic cells are not in kiln; Gluon's
`gluon.rnn` layers and cells are (and hybridize to one compiled time loop)."""
from ..._core.base import KilnError
from .io import BucketSentenceIter, encode_sentences  # noqa: F401

_CELLS = ("BaseRNNCell", "RNNCell", "LSTMCell", "GRUCell", "FusedRNNCell",
          "SequentialRNNCell", "BidirectionalCell", "DropoutCell", "ZoneoutCell",
          "ResidualCell", "ModifierCell", "ConvRNNCell", "ConvLSTMCell", "ConvGRUCell",
          "RNNParams", "save_rnn_checkpoint", "load_rnn_checkpoint", "do_rnn_checkpoint",
          "rnn_unroll")


def __getattr__(name):
    if name in _CELLS:
        raise KilnError(f"mx.rnn.{name}: MXNet 1.x's symbolic RNN cells are not part of "
                        "kiln; use gluon.rnn (RNN/LSTM/GRU layers and cells, which "
                        "hybridize to one compiled time loop)")
    raise AttributeError(f"module 'kiln.rnn' has no attribute {name!r}")
