"""Benchmark: convolutional networks, kiln eager and compiled against the peers installed.

Rows: d2l's LeNet training step (batch 256); d2l's ResNet-18 at 96x96, forward at batch 1
and 32 and a training step at batch 32; one 3x3 convolution and one matmul with GFLOP/s;
ResNet-18's first call in a fresh process, with a cold and a warm kiln cache.

python -m kiln bench cnn [--quick] [--compile] [--only lenet,resnet,ops,first]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as onp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import cnn_models  # noqa: E402

import kiln  # noqa: E402
from kiln import np, gluon, init
from kiln.fit import make_step  # noqa: E402

LR = 0.05


def _kiln_step(build, compiled, batch_shape):
    np.random.seed(0)
    net = build()
    net.initialize(init.Xavier())
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": LR})
    return make_step(net, gluon.loss.SoftmaxCrossEntropyLoss(), trainer, compiled=compiled)


def _torch():
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(2)
    return torch


def _one_thread(torch, fn):
    """fn run with PyTorch on one thread: how it does when its second thread would have to
    wait for a busy core (the bench prints the load average)."""
    def run():
        torch.set_num_threads(1)
        try:
            fn()
        finally:
            torch.set_num_threads(2)
    return run


def _torch_train_rows(torch, build, xv, yv, with_compile):
    x, y = torch.from_numpy(xv), torch.from_numpy(yv.astype(onp.int64))
    rows = []
    for label, fmt in (("PyTorch eager (NCHW)", torch.contiguous_format),
                       ("PyTorch eager (channels-last)", torch.channels_last)):
        torch.manual_seed(0)
        net = build(torch).to(memory_format=fmt)
        opt = torch.optim.SGD(net.parameters(), lr=LR)
        loss_fn = torch.nn.CrossEntropyLoss()
        xin = x.contiguous(memory_format=fmt)

        def step(net=net, opt=opt, loss_fn=loss_fn, xin=xin):
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(net(xin), y)
            loss.backward()
            opt.step()
        rows.append((label, step, ""))
    rows.append(("PyTorch eager (NCHW, 1 thread)", _one_thread(torch, rows[0][1]), ""))
    if with_compile:
        torch.manual_seed(0)
        net = build(torch)
        opt = torch.optim.SGD(net.parameters(), lr=LR)
        loss_fn = torch.nn.CrossEntropyLoss()

        @torch.compile
        def fwd_bwd(xin, yin):
            loss = loss_fn(net(xin), yin)
            loss.backward()
            return loss

        def step():
            opt.zero_grad(set_to_none=True)
            fwd_bwd(x, y)
            opt.step()
        start = time.perf_counter()
        step()
        rows.append(("torch.compile", step, f"first call {time.perf_counter() - start:.1f} s"))
    return rows


def _torch_infer_rows(torch, build, xv, with_compile):
    rows = []
    for label, fmt in (("PyTorch eager (NCHW)", torch.contiguous_format),
                       ("PyTorch eager (channels-last)", torch.channels_last)):
        torch.manual_seed(0)
        net = build(torch).eval().to(memory_format=fmt)
        xin = torch.from_numpy(xv).contiguous(memory_format=fmt)

        def run(net=net, xin=xin):
            with torch.no_grad():
                net(xin)
        rows.append((label, run, ""))
    rows.append(("PyTorch eager (NCHW, 1 thread)", _one_thread(torch, rows[0][1]), ""))
    if with_compile:
        torch.manual_seed(0)
        net = torch.compile(build(torch).eval())
        xin = torch.from_numpy(xv)

        def run_c():
            with torch.no_grad():
                net(xin)
        start = time.perf_counter()
        run_c()
        rows.append(("torch.compile", run_c, f"first call {time.perf_counter() - start:.1f} s"))
    return rows


def _ort_row(net, xv, tmp):
    try:
        import onnxruntime as ort
        import kiln.onnx
    except ImportError:
        return []
    path = os.path.join(tmp, f"net{xv.shape[0]}.onnx")
    kiln.onnx.export(net, [np.array(xv)], path)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    return [("ONNX Runtime", lambda: sess.run(None, {name: xv}), "kiln's ONNX export")]


def _jax_lenet_row(xv, yv):
    try:
        import jax
        import jax.numpy as jnp
        from jax import lax
    except ImportError:
        return []
    key = jax.random.PRNGKey(0)
    shapes = [(6, 1, 5, 5), (16, 6, 5, 5), (400, 120), (120, 84), (84, 10)]
    params = []
    for s in shapes:
        key, sub = jax.random.split(key)
        params.append((jax.random.normal(sub, s) * 0.1, jnp.zeros(s[0] if len(s) == 4 else s[1])))

    def pool(h):
        return lax.reduce_window(h, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")

    def loss_fn(p, x, y):
        (w1, b1), (w2, b2), (w3, b3), (w4, b4), (w5, b5) = p
        h = lax.conv_general_dilated(x, w1, (1, 1), ((2, 2), (2, 2))) + b1[:, None, None]
        h = pool(jax.nn.relu(h))
        h = lax.conv_general_dilated(h, w2, (1, 1), "VALID") + b2[:, None, None]
        h = pool(jax.nn.relu(h)).reshape(x.shape[0], -1)
        h = jax.nn.relu(h @ w3 + b3)
        h = jax.nn.relu(h @ w4 + b4)
        logp = jax.nn.log_softmax(h @ w5 + b5)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    return harness.jax_sgd_row(loss_fn, params, xv, yv, LR)


def _train_group(title, build, torch_build, shape, classes, args, jax_rows=None):
    rng = onp.random.default_rng(0)
    xv = rng.normal(size=shape).astype(onp.float32)
    yv = rng.integers(0, classes, size=shape[0]).astype(onp.float32)
    x, y = np.array(xv), np.array(yv)
    rows = [("kiln eager", lambda s=_kiln_step(build, False, shape): s(x, y), "")]
    step = _kiln_step(build, True, shape)
    start = time.perf_counter()
    step(x, y)
    rows.append(("kiln compiled", lambda: step(x, y),
                 f"first call {time.perf_counter() - start:.2f} s"))
    torch = _torch()
    if torch is not None:
        rows += _torch_train_rows(torch, torch_build, xv, yv, args.compile)
    rows += jax_rows(xv, yv) if jax_rows else []
    return title, rows


def _infer_group(title, build, torch_build, shape, args, tmp):
    xv = onp.random.default_rng(1).normal(size=shape).astype(onp.float32)
    x = np.array(xv)
    np.random.seed(0)
    net = build()
    net.initialize(init.Xavier())
    net(x)                                  # deferred shapes
    rows = [("kiln eager", lambda: net(x).asnumpy(), "")]
    hyb = build()
    hyb.initialize(init.Xavier())
    hyb.hybridize()
    start = time.perf_counter()
    hyb(x)
    first = time.perf_counter() - start
    rows.append(("kiln compiled", lambda: hyb(x), f"first call {first:.2f} s"))
    torch = _torch()
    if torch is not None:
        rows += _torch_infer_rows(torch, torch_build, xv, args.compile)
    rows += _ort_row(hyb, xv, tmp)
    return title, rows


def _ops_group(args):
    from kiln import npx
    rng = onp.random.default_rng(2)
    xv = rng.normal(size=(32, 64, 32, 32)).astype(onp.float32)
    wv = (rng.normal(size=(64, 64, 3, 3)) * 0.05).astype(onp.float32)
    bv = onp.zeros(64, onp.float32)
    x, w, b = np.array(xv), np.array(wv), np.array(bv)

    def conv(x, w, b):
        return npx.relu(npx.convolution(x, w, b, kernel=(3, 3), pad=(1, 1), num_filter=64))
    compiled = kiln.hybridize(conv)
    flops = 2 * 32 * 64 * 64 * 9 * 32 * 32
    rows = [("kiln eager conv", lambda: conv(x, w, b), ""),
            ("kiln compiled conv", lambda: compiled(x, w, b), "")]
    am, bm = rng.normal(size=(1024, 512)).astype(onp.float32), \
        rng.normal(size=(512, 256)).astype(onp.float32)
    ka, kb = np.array(am), np.array(bm)
    mm = kiln.hybridize(lambda a, b: npx.relu(np.matmul(a, b)))
    mm_flops = 2 * 1024 * 512 * 256
    rows += [("kiln compiled matmul+relu", lambda: mm(ka, kb), "")]
    torch = _torch()
    if torch is not None:
        F = torch.nn.functional
        tx, tw, tb = torch.from_numpy(xv), torch.from_numpy(wv), torch.from_numpy(bv)
        txc = tx.contiguous(memory_format=torch.channels_last)
        twc = tw.contiguous(memory_format=torch.channels_last)
        ta, tbm = torch.from_numpy(am), torch.from_numpy(bm)

        def tconv(x, w):
            with torch.no_grad():
                F.relu(F.conv2d(x, w, tb, padding=1))

        def tmm():
            with torch.no_grad():
                F.relu(ta @ tbm)
        rows += [("PyTorch conv (NCHW)", lambda: tconv(tx, tw), ""),
                 ("PyTorch conv (channels-last)", lambda: tconv(txc, twc), ""),
                 ("PyTorch matmul+relu", tmm, "")]
    timed = harness.side_by_side(rows, min_time=0.1 if args.quick else 0.4, warmup=3)
    out = []
    for name, t, note in timed:
        f = mm_flops if "matmul" in name else flops
        out.append((name, t, f"{f / t / 1e9:.0f} GFLOP/s"))
    return out


_FIRST = """
import sys, time
sys.path.insert(0, {bench!r})
import numpy as onp
from kiln import np, init
import cnn_models
net = cnn_models.kiln_resnet18()
net.initialize(init.Xavier())
net.hybridize()
x = np.array(onp.zeros((1, 1, 96, 96), onp.float32))
start = time.perf_counter()
net(x).asnumpy()
print(time.perf_counter() - start)
"""


def _first_calls():
    bench = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, KILN_CACHE_DIR=cache)
        times = []
        for _ in range(2):          # cold cache, then warm
            res = subprocess.run([sys.executable, "-c", _FIRST.format(bench=bench)], env=env,
                                 capture_output=True, text=True, timeout=600)
            times.append(float(res.stdout.strip().splitlines()[-1]) if res.returncode == 0
                         else None)
    return times


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m kiln bench cnn")
    parser.add_argument("--quick", action="store_true", help="shorter timings")
    parser.add_argument("--compile", action="store_true", help="include torch.compile")
    parser.add_argument("--only", default="lenet,resnet,ops,first")
    args = parser.parse_args(argv)
    only = set(args.only.split(","))
    from kiln.backend import dnnl
    from kiln.backend.dnnl.library import threads
    state = (f"on, {threads()} OpenMP thread(s)" if dnnl.available()
             else f"off ({dnnl.unavailable_reason()})")
    print(f"kiln {kiln.__version__}; {harness.setup_line()}; oneDNN: {state}; load average "
          f"{os.getloadavg()[0]:.1f}\n")
    min_time = 0.2 if args.quick else 1.0
    with tempfile.TemporaryDirectory() as tmp:
        groups = []
        if "lenet" in only:
            groups.append(_train_group("LeNet training step, batch 256", cnn_models.kiln_lenet,
                                       cnn_models.torch_lenet, (256, 1, 28, 28), 10, args,
                                       _jax_lenet_row))
        if "resnet" in only:
            for batch in (1, 32):
                groups.append(_infer_group(f"ResNet-18 forward (96x96), batch {batch}",
                                           cnn_models.kiln_resnet18, cnn_models.torch_resnet18,
                                           (batch, 1, 96, 96), args, tmp))
            groups.append(_train_group("ResNet-18 training step (96x96), batch 32",
                                       cnn_models.kiln_resnet18, cnn_models.torch_resnet18,
                                       (32, 1, 96, 96), 10, args))
        for title, rows in groups:
            timed = harness.side_by_side(rows, min_time=min_time, rounds=3, warmup=2)
            print(harness.markdown_table(title, timed, "kiln compiled") + "\n")
    if "ops" in only:
        print(harness.markdown_table("single ops: conv 3x3 64->64, batch 32, 32x32, +bias+ReLU; "
                                     "matmul 1024x512x256 +ReLU", _ops_group(args),
                                     "kiln compiled conv") + "\n")
    if "first" in only:
        cold, warm = _first_calls()
        print(f"ResNet-18 first call in a fresh process: cold cache {harness.fmt_time(cold)}, "
              f"warm cache {harness.fmt_time(warm)}")


if __name__ == "__main__":
    main()
