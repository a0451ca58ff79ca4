"""Benchmark: low precision, kiln beside PyTorch and ONNX Runtime, in one run.

Rows: d2l's ResNet-18 (10 classes) inference at batch 32 (1x96x96 by default; --size N)
in float32, bfloat16 (kiln: amp.convert_hybrid_block; PyTorch: bfloat16 weights, and
autocast) and int8 (kiln: quantize_net with naive calibration; ONNX Runtime: its static
QDQ quantization of kiln's exported float32 model); a BERT-base encoder layer (768
hidden, 12 heads, 3072 FFN) at batch 8 x 128 in float32, bfloat16 and dynamic int8
(kiln: quantize_net calib_mode='none'; PyTorch: quantize_dynamic of its FFN layers); and
AMP training steps of both (kiln: the hybridized net in amp; PyTorch: autocast); and the
accuracy row (bench/lowp_accuracy.py): a digits CNN in float32, int8 and AMP bfloat16.
The header names the CPU, oneDNN's ISA and the load average: a shared machine's numbers
are only comparable within one run.

python -m kiln bench lowp [--quick] [--size N] [--only resnet,bert,train,accuracy]
"""
import argparse
import contextlib
import os
import sys
import tempfile
import time
import warnings

import numpy as onp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import cnn_models  # noqa: E402
import lowp_accuracy  # noqa: E402

from kiln import np, npx, init  # noqa: E402
from kiln.cli.info import lines as info_lines  # noqa: E402
from kiln.contrib import amp, quantization  # noqa: E402
from kiln.gluon import nn  # noqa: E402


def _torch_call(torch, model, inp, ctx=None):
    """A timed call of a PyTorch model without autograd, inside ctx() (autocast) if given."""
    def call():
        with torch.no_grad(), (ctx() if ctx is not None else contextlib.nullcontext()):
            model(inp)
    return call


def _torch():
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(2)
    return torch


def _safe(rows, name, make, note=""):
    """Append (name, fn, note) when make() gives a callable, else report why not."""
    try:
        fn = make()
        fn()
        rows.append((name, fn, note))
    except Exception as exc:    # noqa: BLE001 -- a missing peer or kernel is a table row
        print(f"  ({name}: skipped, {type(exc).__name__}: {str(exc)[:160]})")


class _CpuTimed:
    """A row's callable that adds up its CPU time (time.process_time: every thread of this
    process), so a shared machine's table says how much work a call took beside how long."""

    def __init__(self, fn):
        self.fn, self.calls, self.cpu = fn, 0, 0.0

    def __call__(self):
        start = time.process_time()
        self.fn()
        self.cpu += time.process_time() - start
        self.calls += 1


def _side_by_side(rows, **kwargs):
    """harness.side_by_side with each row's CPU time per call (warm-up included) in its
    note, and the load average when the rows ran."""
    timed = [(name, _CpuTimed(fn), note) for name, fn, note in rows]
    out = harness.side_by_side(timed, **kwargs)
    load = os.getloadavg()[0]
    return [(name, t, f"{note} cpu {fn.cpu / max(fn.calls, 1) * 1e3:.1f} ms, load {load:.1f}"
             .strip()) for (name, t, note), (_, fn, _) in zip(out, timed)]


def _kiln_block(build, x, convert=None):
    net = build()
    net.initialize(init.Xavier())
    net(x)
    if convert is not None:
        convert(net)
    net.hybridize()
    net(x)
    return lambda: net(x).wait_to_read()


def resnet_rows(batch, size, quick):
    torch = _torch()
    xv = onp.random.default_rng(0).standard_normal((batch, 1, size, size)).astype("float32")
    x = np.array(xv)
    calib = [np.array(xv)]
    rows = []
    _safe(rows, "kiln float32", lambda: _kiln_block(cnn_models.kiln_resnet18, x))
    _safe(rows, "kiln bfloat16 (AMP)", lambda: _kiln_block(
        cnn_models.kiln_resnet18, x, lambda n: amp.convert_hybrid_block(n, "bfloat16")))
    _safe(rows, "kiln int8 (naive)", lambda: _kiln_block(
        cnn_models.kiln_resnet18, x,
        lambda n: quantization.quantize_net(n, calib_data=calib, calib_mode="naive")))
    if torch is not None:
        model = cnn_models.torch_resnet18(torch).eval()
        tx = torch.from_numpy(xv)
        _safe(rows, "PyTorch float32", lambda: _torch_call(torch, model, tx))
        _safe(rows, "PyTorch bfloat16 weights", lambda: _torch_call(torch,
            cnn_models.torch_resnet18(torch).eval().to(torch.bfloat16), tx.to(torch.bfloat16)))
        _safe(rows, "PyTorch autocast bfloat16", lambda: _torch_call(torch,
            model, tx, lambda: torch.autocast("cpu", dtype=torch.bfloat16)))
    _safe(rows, "ONNX Runtime float32", lambda: _ort(xv, quantize=False))
    _safe(rows, "ONNX Runtime int8 (static QDQ)", lambda: _ort(xv, quantize=True))
    return _side_by_side(rows, rounds=3 if quick else 5, warmup=2 if quick else 5)


def _ort(xv, quantize):
    import onnxruntime as ort
    from kiln.export import onnx as kiln_onnx
    net = cnn_models.kiln_resnet18()
    net.initialize(init.Xavier())
    x = np.array(xv)
    net(x)
    tmp = tempfile.mkdtemp(prefix="kiln-lowp-")
    path = kiln_onnx.export(net, [x], os.path.join(tmp, "resnet18.onnx"))
    if quantize:
        from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

        class Reader(CalibrationDataReader):
            def __init__(self):
                self.done = False

            def get_next(self):
                if self.done:
                    return None
                self.done = True
                return {"data": xv}
        qpath = os.path.join(tmp, "resnet18_int8.onnx")
        quantize_static(path, qpath, Reader(), quant_format=QuantFormat.QDQ)
        path = qpath
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    sess = ort.InferenceSession(path, opts)
    name = sess.get_inputs()[0].name
    return lambda: sess.run(None, {name: xv})


class KilnEncoderLayer(nn.HybridBlock):
    """BERT-base's encoder layer: self-attention (12 heads), add & LayerNorm, GELU FFN."""

    def __init__(self, hidden=768, heads=12, ffn=3072):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Dense(3 * hidden, flatten=False, in_units=hidden)
        self.out = nn.Dense(hidden, flatten=False, in_units=hidden)
        self.ln1 = nn.LayerNorm(in_channels=hidden)
        self.ffn1 = nn.Dense(ffn, flatten=False, in_units=hidden)
        self.ffn2 = nn.Dense(hidden, flatten=False, in_units=ffn)
        self.ln2 = nn.LayerNorm(in_channels=hidden)

    def forward(self, x):
        b, t, h = x.shape
        d = h // self.heads
        qkv = self.qkv(x).reshape(b, t, 3, self.heads, d).transpose(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        att = npx.softmax(np.matmul(q, k.transpose(0, 1, 3, 2)) / (d ** 0.5), axis=-1)
        ctx = np.matmul(att, v).transpose(0, 2, 1, 3).reshape(b, t, h)
        x = self.ln1(x + self.out(ctx))
        return self.ln2(x + self.ffn2(npx.gelu(self.ffn1(x))))


def _torch_layer(torch):
    layer = torch.nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.0, activation="gelu",
                                             batch_first=True)
    return layer.eval()


def bert_rows(quick):
    torch = _torch()
    xv = onp.random.default_rng(1).standard_normal((8, 128, 768)).astype("float32")
    x = np.array(xv)
    rows = []
    _safe(rows, "kiln float32", lambda: _kiln_block(KilnEncoderLayer, x))
    _safe(rows, "kiln bfloat16 (AMP)", lambda: _kiln_block(
        KilnEncoderLayer, x, lambda n: amp.convert_hybrid_block(n, "bfloat16")))
    _safe(rows, "kiln dynamic int8 dense", lambda: _kiln_block(
        KilnEncoderLayer, x,
        lambda n: quantization.quantize_net(n, calib_mode="none", data_shapes=[xv.shape])))
    if torch is not None:
        layer, tx = _torch_layer(torch), torch.from_numpy(xv)
        _safe(rows, "PyTorch float32", lambda: _torch_call(torch, layer, tx))
        _safe(rows, "PyTorch bfloat16 weights", lambda: _torch_call(torch,
            _torch_layer(torch).to(torch.bfloat16), tx.to(torch.bfloat16)))
        _safe(rows, "PyTorch autocast bfloat16", lambda: _torch_call(torch,
            layer, tx, lambda: torch.autocast("cpu", dtype=torch.bfloat16)))
        # the FFN's Linear layers (attention's fused projection has no dynamic int8 form;
        # the layer's fused fast path reads float weights, so it is off for this row)
        def dynamic():
            q = torch.ao.quantization.quantize_dynamic(_torch_layer(torch), {"linear1",
                                                                            "linear2"},
                                                       dtype=torch.qint8)
            inner = _torch_call(torch, q, tx)

            def call():
                torch.backends.mha.set_fastpath_enabled(False)
                try:
                    inner()
                finally:
                    torch.backends.mha.set_fastpath_enabled(True)
            return call
        _safe(rows, "PyTorch dynamic int8 FFN", dynamic)
    return _side_by_side(rows, rounds=3 if quick else 5, warmup=2 if quick else 5)


def _kiln_train(build, x, y, loss_fn, convert):
    """One training step, compiled whole (kiln.fit.make_step: forward, backward and the SGD
    update one program, in AMP when the net is converted), float32 master weights."""
    from kiln import gluon
    from kiln.fit import make_step
    net = build()
    net.initialize(init.Xavier())
    net(x)
    net.hybridize()
    if convert:
        amp.convert_hybrid_block(net, "bfloat16")
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01})
    step = make_step(net, loss_fn, trainer, compiled=True)
    return lambda: step(x, y).wait_to_read()


def _torch_train(torch, model, x, y, loss_fn, autocast):
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step():
        opt.zero_grad(set_to_none=True)
        if autocast:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = loss_fn(model(x), y)
        else:
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    return step


def train_rows(size, quick):
    """AMP training steps: ResNet-18 at batch 32 (classes) and the BERT layer (a squared
    error on its output), float32 and bfloat16, beside PyTorch's autocast."""
    from kiln import gluon
    torch = _torch()
    r = onp.random.default_rng(2)
    xv = r.standard_normal((32, 1, size, size)).astype("float32")
    yv = r.integers(0, 10, 32).astype("float32")
    bv = r.standard_normal((8, 128, 768)).astype("float32")
    ce, l2 = gluon.loss.SoftmaxCrossEntropyLoss(), gluon.loss.L2Loss()
    rows = []
    for label, build, x, y, loss in (
            ("ResNet-18", cnn_models.kiln_resnet18, np.array(xv), np.array(yv), ce),
            ("BERT layer", KilnEncoderLayer, np.array(bv), np.array(bv), l2)):
        _safe(rows, f"{label}: kiln float32", lambda: _kiln_train(build, x, y, loss, False))
        _safe(rows, f"{label}: kiln AMP bfloat16", lambda: _kiln_train(build, x, y, loss, True))
        if torch is None:
            continue
        if label == "ResNet-18":
            tx, ty = torch.from_numpy(xv), torch.from_numpy(yv.astype(onp.int64))
            model, tloss = cnn_models.torch_resnet18(torch), torch.nn.CrossEntropyLoss()
        else:
            tx = ty = torch.from_numpy(bv)
            model, tloss = _torch_layer(torch).train(), torch.nn.MSELoss()
        _safe(rows, f"{label}: PyTorch float32", lambda: _torch_train(torch, model, tx, ty,
                                                                       tloss, False))
        _safe(rows, f"{label}: PyTorch autocast bfloat16", lambda: _torch_train(
            torch, model, tx, ty, tloss, True))
    return _side_by_side(rows, rounds=3 if quick else 5, warmup=1 if quick else 3)


def main(argv):
    parser = argparse.ArgumentParser(prog="python -m kiln bench lowp")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--size", type=int, default=96, help="ResNet-18 input size")
    parser.add_argument("--only", default="resnet,bert,train,accuracy")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    print("\n".join(info_lines()))
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}")
    only = set(args.only.split(","))
    if "resnet" in only:
        rows = resnet_rows(32, args.size, args.quick)
        print(harness.markdown_table(f"ResNet-18 inference, batch 32, 1x{args.size}x"
                                     f"{args.size}", rows, "kiln float32"))
    if "bert" in only:
        rows = bert_rows(args.quick)
        print(harness.markdown_table("BERT-base encoder layer, batch 8 x 128", rows,
                                     "kiln float32"))
    if "train" in only:
        rows = train_rows(args.size, args.quick)
        print(harness.markdown_table("Training steps (ResNet-18 batch 32; BERT layer 8 x 128)",
                                     rows, rows[0][0] if rows else ""))
    if "accuracy" in only:
        epochs = 8 if args.quick else lowp_accuracy.EPOCHS
        print(lowp_accuracy.markdown(lowp_accuracy.rows(epochs), epochs))
    print(f"load average after {os.getloadavg()[0]:.2f}")
    return 0
