"""Benchmark: the cost of one eager (imperative) op, in µs per call, on kiln, MXNet and
PyTorch, on arrays small enough that the cost is the framework's, not the kernel's.

python -m kiln bench eager_ops [--mxnet-python PATH] [--quick]

MXNet 1.9 needs NumPy < 1.24, so it runs in an interpreter of its own: pass one that has
it with --mxnet-python (or set KILN_BENCH_MXNET_PYTHON); without one the MXNet column
says n/a. Each runtime runs in a fresh process of its own (this file with --worker), the
processes take turns for several rounds, and the table gives each case's median over the
rounds. MXNet's ops are asynchronous: every timed batch of calls ends with npx.waitall(),
so its figure is what a call costs, not what pushing it onto the engine costs.
"""
import argparse
import json
import os
import subprocess
import sys
import time

SMALL, MEDIUM = (2, 8), (32, 64)
LOGITS, TOKENS, SEQ = (64, 1000), (32, 20), (20, 8, 16)


def array_cases(np, npx, autograd, nn, rnn):
    """{case: zero-argument call} for kiln and MXNet (the same code: MXNet's numpy API)."""
    import numpy as onp
    rng = onp.random.default_rng(0)

    def arr(*shape):
        return np.array(rng.normal(size=shape).astype("float32"))

    a, b = arr(*SMALL), arr(*SMALL)
    x, y, w, bias = arr(*MEDIUM), arr(*MEDIUM), arr(64, 64), arr(64)
    dense = nn.Dense(64, in_units=64)
    dense.initialize()
    xg = arr(*MEDIUM)
    xg.attach_grad()
    wg = arr(64, 64)
    wg.attach_grad()

    def recorded_chain():
        with autograd.record():
            out = (np.tanh(np.dot(xg, wg) + bias) * xg).sum()
        out.backward()

    def recorded_add():
        with autograd.record():
            out = xg + y
        return out

    def recorded_add_backward():
        with autograd.record():
            out = xg + y
        out.backward()

    def dense_recorded():
        with autograd.record():
            out = dense(xg)
        out.backward()

    # the NLP chapters' layers, small: what a step costs beyond its kernels
    logits = arr(*LOGITS)
    logits.attach_grad()
    embedding = nn.Embedding(1000, 32)
    embedding.initialize()
    tokens = np.array(rng.integers(0, 1000, TOKENS).astype("float32"))
    lstm = rnn.LSTM(32, input_size=16)
    lstm.initialize()
    seq = arr(*SEQ)

    def log_softmax_recorded():
        with autograd.record():
            out = npx.log_softmax(logits)
        out.backward()

    def embedding_recorded():
        with autograd.record():
            out = embedding(tokens)
        out.backward()

    def lstm_recorded():
        with autograd.record():
            out = lstm(seq)
        out.backward()

    return {
        "add (2,8)": lambda: a + b,
        "mul (2,8)": lambda: a * b,
        "add scalar (2,8)": lambda: a + 1.0,
        "add (32,64)": lambda: x + y,
        "broadcast add (32,64)+(64,)": lambda: x + bias,
        "dot (32,64)x(64,64)": lambda: np.dot(x, w),
        "reshape (32,64)": lambda: x.reshape(64, 32),
        "swapaxes (32,64)": lambda: x.swapaxes(0, 1),
        "slice x[:, 1:3]": lambda: x[:, 1:3],
        "row x[3]": lambda: x[3],
        "softmax (32,64)": lambda: npx.softmax(x),
        "concatenate 2x(32,64)": lambda: np.concatenate([x, y], axis=1),
        "expand_dims (32,64)": lambda: np.expand_dims(x, axis=1),
        "tanh (32,64)": lambda: np.tanh(x),
        "sum (32,64)": lambda: x.sum(),
        "Dense(64) forward (32,64)": lambda: dense(x),
        "record: add": recorded_add,
        "record: add + backward": recorded_add_backward,
        "record: 5 ops + backward": recorded_chain,
        "record: Dense + backward": dense_recorded,
        "record: log_softmax (64,1000) + backward": log_softmax_recorded,
        "record: Embedding(1000,32) (32,20) + backward": embedding_recorded,
        "record: LSTM(32) T=20 N=8 + backward": lstm_recorded,
    }


def torch_cases():
    import torch
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)

    def arr(*shape, grad=False):
        return torch.randn(*shape, generator=g).requires_grad_(grad)

    a, b = arr(*SMALL), arr(*SMALL)
    x, y, w, bias = arr(*MEDIUM), arr(*MEDIUM), arr(64, 64), arr(64)
    dense = torch.nn.Linear(64, 64)
    xg, wg = arr(*MEDIUM, grad=True), arr(64, 64, grad=True)

    def no_grad(fn):
        def run():
            with torch.no_grad():
                return fn()
        return run

    def recorded_chain():
        (torch.tanh(xg @ wg + bias) * xg).sum().backward()

    def recorded_add_backward():
        (xg + y).backward(torch.ones_like(y))

    def dense_recorded():
        dense(xg).backward(torch.ones(32, 64))

    logits = arr(*LOGITS, grad=True)
    embedding = torch.nn.Embedding(1000, 32)
    tokens = torch.randint(0, 1000, TOKENS, generator=g)
    lstm = torch.nn.LSTM(16, 32)
    seq = arr(*SEQ)

    def log_softmax_recorded():
        out = torch.log_softmax(logits, -1)
        out.backward(torch.ones_like(out))

    def embedding_recorded():
        out = embedding(tokens)
        out.backward(torch.ones_like(out))

    def lstm_recorded():
        out = lstm(seq)[0]
        out.backward(torch.ones_like(out))

    return {
        "add (2,8)": lambda: a + b,
        "mul (2,8)": lambda: a * b,
        "add scalar (2,8)": lambda: a + 1.0,
        "add (32,64)": lambda: x + y,
        "broadcast add (32,64)+(64,)": lambda: x + bias,
        "dot (32,64)x(64,64)": lambda: x @ w,
        "reshape (32,64)": lambda: x.reshape(64, 32),
        "swapaxes (32,64)": lambda: x.transpose(0, 1),
        "slice x[:, 1:3]": lambda: x[:, 1:3],
        "row x[3]": lambda: x[3],
        "softmax (32,64)": lambda: torch.softmax(x, -1),
        "concatenate 2x(32,64)": lambda: torch.cat([x, y], 1),
        "expand_dims (32,64)": lambda: x.unsqueeze(1),
        "tanh (32,64)": lambda: torch.tanh(x),
        "sum (32,64)": lambda: x.sum(),
        "Dense(64) forward (32,64)": no_grad(lambda: dense(x)),
        "record: add": lambda: xg + y,
        "record: add + backward": recorded_add_backward,
        "record: 5 ops + backward": recorded_chain,
        "record: Dense + backward": dense_recorded,
        "record: log_softmax (64,1000) + backward": log_softmax_recorded,
        "record: Embedding(1000,32) (32,20) + backward": embedding_recorded,
        "record: LSTM(32) T=20 N=8 + backward": lstm_recorded,
    }


def _cases(runtime):
    if runtime == "torch":
        return torch_cases(), lambda: None
    if runtime == "kiln":
        from kiln import np, npx
        from kiln import autograd
        from kiln.gluon import nn, rnn
        return array_cases(np, npx, autograd, nn, rnn), lambda: None
    import warnings
    warnings.simplefilter("ignore")
    from mxnet import np, npx, autograd
    from mxnet.gluon import nn, rnn
    npx.set_np()
    return array_cases(np, npx, autograd, nn, rnn), npx.waitall


def time_cases(runtime, min_time):
    """{case: seconds per call}: each case's loop doubled until it takes min_time."""
    import gc
    cases, sync = _cases(runtime)
    out = {}
    for name, fn in cases.items():
        for _ in range(20):
            fn()
        sync()
        n = 16
        while True:
            gc.collect()
            gc.disable()
            start = time.perf_counter()
            for _ in range(n):
                fn()
            sync()
            took = time.perf_counter() - start
            gc.enable()
            if took > min_time or n > 1 << 20:
                break
            n *= 2
        out[name] = took / n
    return out


def _worker_command(runtime, python, min_time):
    return [python, os.path.abspath(__file__), "--worker", runtime, "--min-time", str(min_time)]


def _run_worker(cmd, env):
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        print(f"eager_ops: {cmd[0]} --worker {cmd[3]} failed: {tail}", file=sys.stderr)
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def _fmt(seconds):
    return "n/a" if seconds is None else f"{seconds * 1e6:.1f}"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m kiln bench eager_ops")
    parser.add_argument("--mxnet-python", default=os.environ.get("KILN_BENCH_MXNET_PYTHON"),
                        help="an interpreter with MXNet 1.9 installed")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--worker", choices=("kiln", "mxnet", "torch"), help=argparse.SUPPRESS)
    parser.add_argument("--min-time", type=float, default=0.05, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(time_cases(args.worker, args.min_time)))
        return 0
    # one thread each, and no spinning pools: the cost of a call, not of a thread pool
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               KILN_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE")
    checkout = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    runtimes = [("kiln", _worker_command("kiln", sys.executable, args.min_time),
                 dict(env, PYTHONPATH=checkout))]
    if args.mxnet_python:
        # kiln's checkout off the path: it registers no `mxnet` here, the real one loads
        runtimes.append(("MXNet", _worker_command("mxnet", args.mxnet_python, args.min_time),
                         {k: v for k, v in env.items() if k != "PYTHONPATH"}))
    try:
        import torch  # noqa: F401
        runtimes.append(("PyTorch", _worker_command("torch", sys.executable, args.min_time), env))
    except ImportError:
        pass
    rounds = args.rounds or (1 if args.quick else 3)
    samples = {name: [] for name, _, _ in runtimes}
    for _ in range(rounds):          # the runtimes take turns: a slow stretch hits them all
        for name, cmd, run_env in runtimes:
            got = _run_worker(cmd, run_env)
            if got is not None:
                samples[name].append(got)
    medians = {}
    for name, runs in samples.items():
        if runs:
            medians[name] = {case: sorted(r[case] for r in runs)[len(runs) // 2]
                             for case in runs[0]}
    names = [n for n, _, _ in runtimes]
    if "MXNet" not in names:
        names.insert(1, "MXNet")
    cases = list(medians["kiln"]) if "kiln" in medians else []
    print(f"µs per eager call, median of {rounds} round(s), one thread per runtime "
          "(MXNet: " + ("n/a, pass --mxnet-python" if "MXNet" not in medians
                        else "ends each timed loop with npx.waitall()") + ")\n")
    head = "| op | " + " | ".join(names) + " | kiln / MXNet |"
    print(head)
    print("| --- |" + " ---: |" * (len(names) + 1))
    for case in cases:
        vals = [medians.get(n, {}).get(case) for n in names]
        mx = medians.get("MXNet", {}).get(case)
        ratio = f"{medians['kiln'][case] / mx:.2f}×" if mx else "n/a"
        print(f"| {case} | " + " | ".join(_fmt(v) for v in vals) + f" | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
