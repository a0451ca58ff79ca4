"""Benchmark: transformers. A BERT-base encoder layer (hidden 768, 12 heads, FFN 3072, GELU,
post-LayerNorm) written in Gluon the plain way and hybridized, inference at batch 1 x 128
and 8 x 128 and a training step (Adam); the layer's parts (the four dense layers, GELU,
LayerNorm, the attention core); elementwise functions over 3M floats; a GPT-2-small style
decoder generating 32 tokens with a key/value cache. Peers in the same run: PyTorch eager,
ONNX Runtime on the PyTorch model's export, torch.compile (--compile; slow to compile).

python -m kiln bench transformer [--quick] [--compile] [--only layer,parts,math,train,decode]
    [--encoder-layers N]

Timings are medians over interleaved rounds (harness.side_by_side); the caption gives the
CPU and the load average, since the machine's cores may be shared.
"""
import argparse
import io
import os
import sys
import time

import numpy as onp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import peers  # noqa: E402,F401  (sets the peers' thread-pool environment first)
import transformer_models as tm  # noqa: E402

import kiln  # noqa: E402
from kiln import np, npx, gluon  # noqa: E402
from kiln.gluon import nn  # noqa: E402

SEQ = 128


def _torch():
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(2)
    return torch


def _kiln_infer(net, xv):
    x = np.array(xv)

    def run():
        net(x).wait_to_read()
    return run


def _torch_infer(torch, module, xv):
    x = torch.from_numpy(xv)

    def run():
        with torch.inference_mode():
            module(x)
    return run


def _ort_rows(torch, module, xv):
    try:
        import onnxruntime as ort
    except ImportError:
        return []
    buf = io.BytesIO()
    torch.onnx.export(module, (torch.from_numpy(xv),), buf, dynamo=False, opset_version=17,
                      input_names=["x"], output_names=["y"])
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    sess = ort.InferenceSession(buf.getvalue(), opts, providers=["CPUExecutionProvider"])
    feed = {"x": xv}
    return [("ONNX Runtime (PyTorch export)", lambda: sess.run(None, feed), "")]


def _compile_row(torch, module, xv):
    compiled = torch.compile(module)
    x = torch.from_numpy(xv)
    start = time.perf_counter()
    with torch.inference_mode():
        compiled(x)
    first = time.perf_counter() - start

    def run():
        with torch.inference_mode():
            compiled(x)
    return [("torch.compile", run, f"first call {first:.0f} s")]


def _check(a, b, what, tol=2e-3):
    err = float(onp.max(onp.abs(onp.asarray(a) - onp.asarray(b))))
    if not err <= tol:
        print(f"WARNING: {what}: kiln and PyTorch differ by {err:.3g}")


def layer_rows(torch, batch, args, encoder_layers=1):
    onp.random.seed(0)
    np.random.seed(0)
    net = tm.BertEncoder(encoder_layers)
    net.initialize()
    xv = onp.random.default_rng(0).normal(size=(batch, SEQ, tm.HIDDEN)).astype(onp.float32)
    eager = _kiln_infer(net, xv)
    rows = [] if args.quick or encoder_layers > 1 else [("kiln eager", eager, "")]
    hybrid = tm.BertEncoder(encoder_layers)
    hybrid.initialize()
    for a, b in zip(hybrid.collect_params().values(), net.collect_params().values()):
        a.set_data(b.data())
    hybrid.hybridize()
    start = time.perf_counter()
    y = hybrid(np.array(xv)).asnumpy()
    rows.insert(0, ("kiln hybridized", _kiln_infer(hybrid, xv),
                    f"first call {time.perf_counter() - start:.1f} s"))
    if torch is not None:
        module = torch.nn.Sequential(*[tm.torch_bert_layer(torch, layer)
                                       for layer in net.layers]).eval()
        with torch.inference_mode():
            _check(y, module(torch.from_numpy(xv)).numpy(), "BERT layer")
        rows.append(("PyTorch eager", _torch_infer(torch, module, xv), ""))
        rows += _ort_rows(torch, module, xv)
        if args.compile:
            rows += _compile_row(torch, module, xv)
    return rows


# ---- the layer's parts ---------------------------------------------------------------------

class _Lambda(nn.HybridBlock):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def _hybrid(fn, *values):
    block = _Lambda(fn)
    block.hybridize()
    xs = [np.array(v) for v in values]
    block(*xs)
    return lambda: block(*xs).wait_to_read()


def part_tables(torch, batch, args):
    """[(title, rows)]: each part of the layer alone, kiln hybridized against PyTorch."""
    rng = onp.random.default_rng(1)
    tokens = batch * SEQ
    d = tm.HIDDEN // tm.HEADS
    F = torch.nn.functional if torch is not None else None
    tables = []
    # the four dense layers, each as the layer runs it
    dense = []
    for n_in, n_out in ((tm.HIDDEN, 3 * tm.HIDDEN), (tm.HIDDEN, tm.HIDDEN),
                        (tm.HIDDEN, tm.FFN), (tm.FFN, tm.HIDDEN)):
        layer = nn.Dense(n_out, flatten=False, in_units=n_in)
        layer.initialize()
        layer.hybridize()
        dense.append((layer, rng.normal(size=(batch, SEQ, n_in)).astype(onp.float32)))
    xs = [np.array(xv) for _, xv in dense]
    for (layer, _), x in zip(dense, xs):
        layer(x)

    def kiln_dense():
        for (layer, _), x in zip(dense, xs):
            layer(x).wait_to_read()
    rows = [("kiln hybridized", kiln_dense, "")]
    if torch is not None:
        tdense = []
        for layer, xv in dense:
            lin = torch.nn.Linear(*layer.weight.shape[::-1])
            with torch.no_grad():
                lin.weight.copy_(torch.from_numpy(layer.weight.data().asnumpy()))
                lin.bias.copy_(torch.from_numpy(layer.bias.data().asnumpy()))
            tdense.append((lin, torch.from_numpy(xv)))

        def torch_dense():
            with torch.inference_mode():
                for lin, x in tdense:
                    lin(x)
        rows.append(("PyTorch eager", torch_dense, ""))
    flops = 2 * tokens * sum(a * b for a, b in ((768, 2304), (768, 768), (768, 3072),
                                                (3072, 768)))
    tables.append((f"the four dense layers ({flops / 1e9:.1f} GFLOP)", rows))

    h = rng.normal(size=(batch, SEQ, tm.FFN)).astype(onp.float32)
    rows = [("kiln hybridized", _hybrid(npx.gelu, h), "")]
    if torch is not None:
        th = torch.from_numpy(h)
        rows.append(("PyTorch eager", lambda: F.gelu(th), ""))
    tables.append((f"GELU (erf) on {batch}x{SEQ}x{tm.FFN}", rows))

    xv = rng.normal(size=(batch, SEQ, tm.HIDDEN)).astype(onp.float32)
    ln = nn.LayerNorm(in_channels=tm.HIDDEN)
    ln.initialize()
    ln.hybridize()
    x = np.array(xv)
    ln(x)
    rows = [("kiln hybridized", lambda: ln(x).wait_to_read(), "")]
    if torch is not None:
        tln = torch.nn.LayerNorm(tm.HIDDEN)
        tx = torch.from_numpy(xv)

        def torch_ln():
            with torch.inference_mode():
                tln(tx)
        rows.append(("PyTorch eager", torch_ln, ""))
    tables.append((f"LayerNorm on {batch}x{SEQ}x{tm.HIDDEN}", rows))

    q, k, v = (rng.normal(size=(batch, tm.HEADS, SEQ, d)).astype(onp.float32)
               for _ in range(3))

    def core(q, k, v):
        scores = np.matmul(q, k.transpose(0, 1, 3, 2)) / onp.sqrt(d)
        return np.matmul(npx.softmax(scores, axis=-1), v)
    rows = [("kiln hybridized", _hybrid(core, q, k, v), "")]
    if torch is not None:
        tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))

        def sdpa():
            with torch.inference_mode():
                F.scaled_dot_product_attention(tq, tk, tv)
        rows.append(("PyTorch eager (scaled_dot_product_attention)", sdpa, ""))
    tables.append(("attention core (QKᵀ, scale, softmax, ·V)", rows))
    return tables


def _erf(x):
    from kiln.np.special import erf
    return erf(x)


def math_table(torch, args):
    """Elementwise functions over 3M float32, kiln hybridized against PyTorch."""
    rng = onp.random.default_rng(2)
    xv = rng.normal(size=3 * 1024 * 1024).astype(onp.float32) * 3
    fns = [("GELU (erf)", npx.gelu, "gelu"), ("exp", np.exp, "exp"),
           ("tanh", np.tanh, "tanh"), ("erf", _erf, "erf"),
           ("sigmoid", npx.sigmoid, "sigmoid")]
    rows = []
    for label, fn, tname in fns:
        rows.append((f"kiln {label}", _hybrid(fn, xv), ""))
        if torch is not None:
            tx = torch.from_numpy(xv)
            tfn = {"gelu": torch.nn.functional.gelu}.get(tname) or getattr(torch, tname)
            rows.append((f"PyTorch {label}", lambda tfn=tfn: tfn(tx), ""))
    return rows


def train_rows(torch, args):
    batch = 8
    onp.random.seed(0)
    np.random.seed(0)
    net = tm.BertLayer()
    net.initialize()
    xv = onp.random.default_rng(3).normal(size=(batch, SEQ, tm.HIDDEN)).astype(onp.float32)
    yv = onp.random.default_rng(4).normal(size=(batch, SEQ, tm.HIDDEN)).astype(onp.float32)
    tnet = tm.torch_bert_layer(torch, net) if torch is not None else None
    from kiln.fit import make_step
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 1e-4})
    step = make_step(net, gluon.loss.L2Loss(), trainer, compiled=True)
    x, y = np.array(xv), np.array(yv)
    start = time.perf_counter()
    step(x, y).wait_to_read()
    rows = [("kiln compiled step", lambda: step(x, y).wait_to_read(),
             f"first call {time.perf_counter() - start:.1f} s")]
    if torch is not None:
        opt = torch.optim.Adam(tnet.parameters(), lr=1e-4)
        tx, ty = torch.from_numpy(xv), torch.from_numpy(yv)

        def torch_step():
            opt.zero_grad(set_to_none=True)
            loss = ((tnet(tx) - ty) ** 2 / 2).mean(dim=(1, 2)).sum()
            loss.backward()
            opt.step()
        rows.append(("PyTorch eager", torch_step, ""))
    return rows


def decode_rows(torch, args):
    layers = 2 if args.quick else 12
    np.random.seed(0)
    net = tm.Decoder(layers=layers)
    net.initialize()
    net.hybridize()
    prompt = [50, 100, 7, 3000, 42, 9, 11, 500]
    new = 32
    start = time.perf_counter()
    ours = tm.kiln_generate(net, prompt, new)
    rows = [("kiln hybridized", lambda: tm.kiln_generate(net, prompt, new),
             f"first call {time.perf_counter() - start:.1f} s")]
    if torch is not None:
        model = tm.torch_decoder(torch, net)
        theirs = tm.torch_generate(torch, model, prompt, new)
        if ours != theirs:
            print(f"WARNING: decoders disagree: kiln {ours[:8]}..., PyTorch {theirs[:8]}...")
        rows.append(("PyTorch eager", lambda: tm.torch_generate(torch, model, prompt, new), ""))
    return rows, len(prompt) + new - 1, layers


def _caption():
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    return f"kiln {kiln.__version__}; {model}, {os.cpu_count()} CPUs; load average {load}"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m kiln bench transformer")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--compile", action="store_true", help="add torch.compile rows")
    parser.add_argument("--only", default="layer,parts,math,train,decode")
    parser.add_argument("--encoder-layers", type=int, default=0,
                        help="also time a whole encoder of N layers at batch 8")
    args = parser.parse_args(argv)
    only = set(args.only.split(","))
    torch = _torch()
    timing = dict(min_time=0.3 if args.quick else 1.0, rounds=3 if args.quick else 5,
                  warmup=2)
    print(_caption() + f"; {harness.setup_line()}\n")

    def show(title, rows, reference, **kw):
        timed = harness.side_by_side(rows, **{**timing, **kw})
        print(harness.markdown_table(title, timed, reference))
        print(f"(load average {', '.join(f'{v:.2f}' for v in os.getloadavg())})\n")
        return timed

    if "layer" in only:
        for batch in (1, 8):
            show(f"BERT-base encoder layer, inference, batch {batch} x {SEQ}",
                 layer_rows(torch, batch, args), "PyTorch eager")
        if args.encoder_layers:
            show(f"BERT-base encoder, {args.encoder_layers} layers, batch 8 x {SEQ}",
                 layer_rows(torch, 8, args, args.encoder_layers), "PyTorch eager")
    if "parts" in only:
        for title, rows in part_tables(torch, 8, args):
            show(f"{title}, batch 8 x {SEQ}", rows, rows[-1][0])
    if "math" in only:
        rows = math_table(torch, args)
        timed = harness.side_by_side(rows, **timing)
        print("### elementwise functions over 3M float32 (kiln hybridized)\n")
        print("| function | kiln | PyTorch | ratio |\n| --- | ---: | ---: | ---: |")
        for k in range(0, len(timed), 2 if torch is not None else 1):
            name, t, _ = timed[k]
            ref = timed[k + 1][1] if torch is not None else None
            ratio = f"{t / ref:.2f}×" if ref else "n/a"
            print(f"| {name[5:]} | {harness.fmt_time(t)} | {harness.fmt_time(ref)} | {ratio} |")
        print(f"(load average {', '.join(f'{v:.2f}' for v in os.getloadavg())})\n")
    if "train" in only:
        show(f"BERT-base layer training step (forward, backward, Adam), batch 8 x {SEQ}",
             train_rows(torch, args), "PyTorch eager")
    if "decode" in only:
        rows, tokens, layers = decode_rows(torch, args)
        timed = harness.side_by_side(rows, min_time=0.1, rounds=3, warmup=1)
        print(f"### GPT-2-small style decoder ({layers} blocks), {tokens} steps with a "
              "key/value cache\n")
        print("| runtime | time per generation | tokens/s | note |\n| --- | ---: | ---: | --- |")
        for name, t, note in timed:
            print(f"| {name} | {harness.fmt_time(t)} | {tokens / t:.1f} | {note} |")
        print(f"(load average {', '.join(f'{v:.2f}' for v in os.getloadavg())})\n")


if __name__ == "__main__":
    main()
