"""MXNet 1.x's `mx.rnn.FusedRNNCell`: a whole stack of recurrent layers as one RNN op
(kiln/mx/ops/rnn.py) over one packed `parameters` variable, and `init.FusedRNN`, which
initializes that vector through its per-gate pieces (registered with kiln.init by name, as
the variable's `__init__` attribute asks for it).

`unpack_weights` / `pack_weights` convert between the packed vector and MXNet's per-gate
names (`l0_i2h_i_weight`, ...), the names the unfused cells (rnn_cell.py) unpack to, so
weights move between a FusedRNNCell and its `unfuse()` stack as in MXNet.
"""
import warnings

from ... import init as kinit
from ..._core.base import KilnError, where_in_user_code
from ..nd import zeros as nd_zeros
from .rnn_cell import (BaseRNNCell, BidirectionalCell, DropoutCell, GRUCell, LSTMCell,
                       RNNCell, SequentialRNNCell, _ZeroState, _op, normalize_sequence,
                       zeros_with_batch_of)

GATE_NAMES = {"rnn_relu": ("",), "rnn_tanh": ("",), "lstm": ("_i", "_f", "_c", "_o"),
              "gru": ("_r", "_z", "_o")}


class FusedRNNCell(BaseRNNCell):
    """Fused RNN layers: unroll gives one RNN node; it cannot be stepped."""

    def __init__(self, num_hidden, num_layers=1, mode="lstm", bidirectional=False,
                 dropout=0., get_next_state=False, forget_bias=1.0, prefix=None,
                 params=None):
        if mode not in GATE_NAMES:
            raise KilnError(f"FusedRNNCell: mode must be one of {', '.join(GATE_NAMES)}, got "
                            f"{mode!r}" + where_in_user_code())
        super().__init__(f"{mode}_" if prefix is None else prefix, params)
        self._num_hidden, self._num_layers, self._mode = num_hidden, num_layers, mode
        self._bidirectional, self._dropout = bidirectional, dropout
        self._get_next_state = get_next_state
        self._directions = ["l", "r"] if bidirectional else ["l"]
        initializer = FusedRNN(None, num_hidden, num_layers, mode, bidirectional, forget_bias)
        self._parameter = self._params.get("parameters", init=initializer)

    @property
    def state_info(self):
        layers = len(self._directions) * self._num_layers
        return [{"shape": (layers, 0, self._num_hidden), "__layout__": "LNC"}
                for _ in range(2 if self._mode == "lstm" else 1)]

    @property
    def _gate_names(self):
        return GATE_NAMES[self._mode]

    def _slice_weights(self, arr, li, lh):
        """{per-gate name: view of arr}; arr is MXNet's packed vector."""
        args, p, b = {}, 0, len(self._directions)
        for layer in range(self._num_layers):
            for d in self._directions:
                for gate in self._gate_names:
                    cols = b * lh if layer > 0 else li
                    args[f"{self._prefix}{d}{layer}_i2h{gate}_weight"] = \
                        arr[p:p + lh * cols].reshape((lh, cols))
                    p += lh * cols
                for gate in self._gate_names:
                    args[f"{self._prefix}{d}{layer}_h2h{gate}_weight"] = \
                        arr[p:p + lh * lh].reshape((lh, lh))
                    p += lh * lh
        for layer in range(self._num_layers):
            for d in self._directions:
                for group in ("i2h", "h2h"):
                    for gate in self._gate_names:
                        args[f"{self._prefix}{d}{layer}_{group}{gate}_bias"] = arr[p:p + lh]
                        p += lh
        if p != arr.size:
            raise KilnError(f"Invalid parameters size for FusedRNNCell: {arr.size} values, "
                            f"this cell packs {p}" + where_in_user_code())
        return args

    def unpack_weights(self, args):
        args = dict(args)
        arr = args.pop(self._parameter.name)
        b, m, h = len(self._directions), len(self._gate_names), self._num_hidden
        num_input = arr.size // b // h // m - (self._num_layers - 1) * (h + b * h + 2) - h - 2
        args.update({name: a.copy() for name, a in
                     self._slice_weights(arr, num_input, h).items()})
        return args

    def pack_weights(self, args):
        args = dict(args)
        b, m, h = len(self._directions), len(self._gate_names), self._num_hidden
        w0 = args[f"{self._prefix}l0_i2h{self._gate_names[0]}_weight"]
        num_input = w0.shape[1]
        total = ((num_input + h + 2) * h * m * b
                 + (self._num_layers - 1) * m * h * (h + b * h + 2) * b)
        arr = nd_zeros((total,), dtype=w0.dtype)
        for name, piece in self._slice_weights(arr, num_input, h).items():
            piece[:] = args.pop(name)
        args[self._parameter.name] = arr
        return args

    def __call__(self, inputs, states):
        raise NotImplementedError("FusedRNNCell cannot be stepped. Please use unroll")

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        self.reset()
        inputs, axis = normalize_sequence(length, inputs, layout, True)
        if axis == 1:
            warnings.warn("NTC layout detected. Consider using TNC for FusedRNNCell for "
                          "faster speed")
            inputs = _op("swapaxes", inputs, dim1=0, dim2=1)
        elif axis != 0:
            raise KilnError(f"FusedRNNCell: unsupported layout {layout}" + where_in_user_code())
        states = self.begin_state() if begin_state is None else list(begin_state)
        states = [zeros_with_batch_of(inputs, 1, s.shape, s.name)
                  if isinstance(s, _ZeroState) else s for s in states]
        named = {"state": states[0]}
        if self._mode == "lstm":
            named["state_cell"] = states[1]
        rnn = _op("RNN", data=inputs, parameters=self._parameter,
                  state_size=self._num_hidden, num_layers=self._num_layers,
                  bidirectional=self._bidirectional, p=self._dropout,
                  state_outputs=self._get_next_state, mode=self._mode,
                  name=self._prefix + "rnn", **named)
        if not self._get_next_state:
            outputs, states = rnn, []
        else:
            outputs, states = rnn[0], [rnn[k] for k in range(1, len(named) + 1)]
        if axis == 1:
            outputs = _op("swapaxes", outputs, dim1=0, dim2=1)
        outputs, _ = normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def unfuse(self):
        """The same network as a SequentialRNNCell of unfused cells (their weights by
        MXNet's names, so pack_weights/unpack_weights move them across)."""
        stack = SequentialRNNCell()
        make = {"rnn_relu": lambda p: RNNCell(self._num_hidden, activation="relu", prefix=p),
                "rnn_tanh": lambda p: RNNCell(self._num_hidden, activation="tanh", prefix=p),
                "lstm": lambda p: LSTMCell(self._num_hidden, prefix=p),
                "gru": lambda p: GRUCell(self._num_hidden, prefix=p)}[self._mode]
        for i in range(self._num_layers):
            if self._bidirectional:
                stack.add(BidirectionalCell(make(f"{self._prefix}l{i}_"),
                                            make(f"{self._prefix}r{i}_"),
                                            output_prefix=f"{self._prefix}bi_l{i}_"))
            else:
                stack.add(make(f"{self._prefix}l{i}_"))
            if self._dropout > 0 and i != self._num_layers - 1:
                stack.add(DropoutCell(self._dropout, prefix=f"{self._prefix}_dropout{i}_"))
        return stack


@kinit.register
class FusedRNN(kinit.Initializer):
    """MXNet's init.FusedRNN: a FusedRNNCell's packed vector initialized piece by piece,
    weights by `init` (or the global initializer), biases zero, an LSTM's forget-gate biases
    at forget_bias."""

    def __init__(self, init, num_hidden, num_layers, mode, bidirectional=False,
                 forget_bias=1.0):
        init = kinit.create(init)
        super().__init__(init=init.dumps() if init is not None else None,
                         num_hidden=num_hidden, num_layers=num_layers, mode=mode,
                         bidirectional=bidirectional, forget_bias=forget_bias)
        self._init, self._num_hidden, self._num_layers = init, num_hidden, num_layers
        self._mode, self._bidirectional, self._forget_bias = mode, bidirectional, forget_bias

    def _init_weight(self, desc, arr):
        cell = FusedRNNCell(self._num_hidden, self._num_layers, self._mode,
                            self._bidirectional, forget_bias=self._forget_bias, prefix="")
        args = cell.unpack_weights({"parameters": arr})
        for name in args:
            arg_desc = kinit.InitDesc(name, global_init=desc.global_init)
            if self._mode == "lstm" and name.endswith("_f_bias"):
                args[name][:] = self._forget_bias
            elif self._init is None:
                desc.global_init(arg_desc, args[name])
            else:
                self._init(arg_desc, args[name])
        arr[:] = cell.pack_weights(args)["parameters"]
