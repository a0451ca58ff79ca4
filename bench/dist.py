"""Benchmark: data-parallel training throughput (samples/s) over MPI, one thread per rank.

    python -m kiln bench dist [--steps N] [--rounds R] [--batch B] [--sweep B1,B2,...]

For an MLP 784-512-512-10 and a LeNet (28x28, ReLU, max pooling), with B samples per rank
and per step (weak scaling: 2 ranks process twice the samples per step):
  kiln 1 rank (compiled step, C), kiln 2 ranks under mpiexec (kvstore='dist_sync', the
  allreduce inside the compiled step), PyTorch 1 rank and PyTorch DDP (gloo) 2 ranks when
  torch is installed. Every rank runs one thread (KILN_NUM_THREADS, torch.set_num_threads,
  and the BLAS/OpenMP variables). Each configuration is a fresh job; the rounds interleave
  them (a 1-rank and a 2-rank job of one round run back to back, so their ratio is a
  paired comparison), and the table shows the median and the best per configuration,
  and, as the machine's own ceiling, two independent 1-rank kiln jobs run at once (no
  communication: a shared cache, memory bus or uneven cores slow them as they slow 2 ranks),
  with the load average around each round. Then kiln's time per step on each rank, split
  into computing, waiting for the other rank and summing gradients into a buffer (the
  sums the update's loop adds as it reads them count as computing; the compiled step's
  own counters, kiln/distributed/shared.py). --sweep adds a table of kiln's 2-rank /
  1-rank ratio at other batch sizes per rank (how scaling grows with the batch).
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import time

import numpy as onp

HERE = os.path.abspath(__file__)
ROOT = os.path.dirname(os.path.dirname(HERE))
MODELS = ("mlp", "lenet")
ONE_THREAD = {k: "1" for k in ("KILN_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                                "OPENBLAS_NUM_THREADS")}


# ---- the workers ---------------------------------------------------------------------------

def _data(model, batch, rank):
    rng = onp.random.default_rng(rank)
    shape = (batch, 784) if model == "mlp" else (batch, 1, 28, 28)
    return (rng.standard_normal(shape).astype(onp.float32),
            rng.integers(0, 10, batch).astype(onp.float32))


def _kiln_net(model):
    from kiln import init
    from kiln.gluon import nn
    net = nn.HybridSequential()
    if model == "mlp":
        net.add(nn.Dense(512, activation="relu", in_units=784),
                nn.Dense(512, activation="relu", in_units=512), nn.Dense(10, in_units=512))
    else:
        net.add(nn.Conv2D(6, 5, padding=2, activation="relu", in_channels=1), nn.MaxPool2D(2),
                nn.Conv2D(16, 5, activation="relu", in_channels=6), nn.MaxPool2D(2),
                nn.Flatten(), nn.Dense(120, activation="relu", in_units=400),
                nn.Dense(84, activation="relu", in_units=120), nn.Dense(10, in_units=84))
    net.initialize(init.Xavier())
    return net


def run_kiln(model, batch, steps):
    from kiln import np, gluon, distributed as dist
    from kiln.distributed import shared
    from kiln.fit import make_step
    net = _kiln_net(model)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01,
                                                          "momentum": 0.9}, kvstore="dist_sync")
    step = make_step(net, gluon.loss.SoftmaxCrossEntropyLoss(), trainer, backend="c")
    xv, yv = _data(model, batch, dist.rank())
    x, y = np.array(xv), np.array(yv)
    windowed = dist.size() > 1 and shared.enabled()
    got = _timed(lambda: step(x, y), steps, dist.barrier,
                 lambda t: dist.sum_over_ranks(t)[0] / dist.size(), dist.size(), dist.rank(),
                 shared.reset_statistics if windowed else (lambda: None))
    # this rank's seconds: the step, waiting for the other ranks, summing gradients
    mine = [got["own_seconds"], *(shared.statistics() if windowed else (0.0, 0.0))]
    per_rank = dist.allgather(np.array(onp.array([mine]))).asnumpy() if dist.size() > 1 \
        else onp.array([mine])
    got["per_rank"] = (per_rank / steps).tolist()
    return got


def _torch_net(model, torch):
    nn = torch.nn
    if model == "mlp":
        return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                             nn.Linear(512, 10))
    return nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                         nn.Linear(84, 10))


def run_torch(model, batch, steps, port):
    import torch
    import torch.distributed as tdist
    torch.set_num_threads(1)
    rank = int(os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", 0)))
    size = int(os.environ.get("PMI_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", 1)))
    torch.manual_seed(0)
    net = _torch_net(model, torch)
    barrier = mean = None
    if size > 1:
        tdist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                 world_size=size)
        net = torch.nn.parallel.DistributedDataParallel(net)
        barrier = tdist.barrier

        def mean(t):
            v = torch.tensor([t], dtype=torch.float64)
            tdist.all_reduce(v)
            return float(v) / size
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    xv, yv = _data(model, batch, rank)
    x, y = torch.from_numpy(xv), torch.from_numpy(yv.astype(onp.int64))

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn(net(x), y).backward()
        opt.step()
    return _timed(step, steps, barrier or (lambda: None), mean or (lambda t: t), size, rank)


def _timed(step, steps, barrier, mean, size, rank, reset=lambda: None):
    for _ in range(max(5, steps // 10)):
        step()
    barrier()
    reset()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    own = time.perf_counter() - start
    barrier()
    seconds = mean(time.perf_counter() - start)
    return {"seconds": seconds, "steps": steps, "ranks": size, "rank": rank,
            "own_seconds": own}


def worker(argv):
    framework, model, batch, steps, port = argv[0], argv[1], int(argv[2]), int(argv[3]), argv[4]
    got = (run_kiln(model, batch, steps) if framework == "kiln"
           else run_torch(model, batch, steps, port))
    if got["rank"] == 0:
        print("RESULT " + json.dumps(got), flush=True)


# ---- the driver ----------------------------------------------------------------------------

def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(framework, ranks, model, batch, steps):
    """One job's result: samples/s over all ranks, and for kiln each rank's seconds per
    step (step, waiting for the other ranks, summing gradients). Framework 'kiln-apart':
    `ranks` independent 1-rank kiln jobs at once, their samples/s added up (what this
    machine gives several single-threaded processes that never communicate)."""
    from kiln.distributed import launch
    worker = "kiln" if framework == "kiln-apart" else framework
    argv = [HERE, "--worker", worker, model, str(batch), str(steps), str(_free_port())]
    if framework == "kiln-apart":
        cmds = [[sys.executable, *argv]] * ranks
    else:
        cmds = [launch.command(ranks, argv) if ranks > 1 else [sys.executable, *argv]]
    env = dict(os.environ, PYTHONPATH=ROOT, **ONE_THREAD)
    jobs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env) for c in cmds]
    results = [_result(job, batch, f"{framework} x{ranks} {model}") for job in jobs]
    got = results[0]
    got["rate"] = sum(r["rate"] for r in results)
    return got


def _result(job, batch, what):
    out, err = job.communicate(timeout=900)
    for line in out.splitlines():
        if line.startswith("RESULT "):
            got = json.loads(line[7:])
            got["rate"] = batch * got["ranks"] * got["steps"] / got["seconds"]
            return got
    raise RuntimeError(f"{what} failed:\n{out[-2000:]}\n{err[-2000:]}")


APART = ("kiln 1-rank jobs apart", 2)


def configurations(with_torch):
    rows = [("kiln", 1), ("kiln", 2), APART]
    if with_torch:
        rows += [("PyTorch", 1), ("PyTorch DDP (gloo)", 2)]
    return rows


def main(argv=None):
    if argv and argv[0] == "--worker":
        return worker(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m kiln bench dist")
    parser.add_argument("--steps", type=int, default=300,
                        help="timed steps per job (an MLP step is about 3 ms: 100 steps "
                             "were a 0.3 s window, short against this machine's noise)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch", type=int, default=64, help="samples per rank and step")
    parser.add_argument("--sweep", default="", metavar="B1,B2,...",
                        help="also kiln's 2-rank / 1-rank ratio at these batch sizes per rank")
    args = parser.parse_args(argv)
    try:
        sweep = [int(b) for b in args.sweep.split(",") if b.strip()]
    except ValueError:
        parser.error(f"--sweep takes batch sizes separated by commas, got {args.sweep!r}")
    from kiln.distributed import launch
    if not launch.available():
        print("kiln bench dist needs mpi4py and mpiexec: pip install 'kiln[dist]'",
              file=sys.stderr)
        return 2
    try:
        import torch  # noqa: F401
        with_torch = True
    except ImportError:
        with_torch = False
    configs = configurations(with_torch)
    loads = [os.getloadavg()[0]]
    runs = {(m, c): [] for m in MODELS for c in configs}
    for _ in range(args.rounds):
        for model in MODELS:
            for fw, ranks in configs:
                key = {"kiln": "kiln", APART[0]: "kiln-apart"}.get(fw, "torch")
                runs[(model, (fw, ranks))].append(
                    _launch(key, ranks, model, args.batch, args.steps))
        loads.append(os.getloadavg()[0])
    _print(runs, configs, args)
    print("load average (1 min) before and after each round: "
          + ", ".join(f"{v:.2f}" for v in loads)
          + " (2 ranks need both cores, so other jobs slow them more than 1 rank)")
    _print_breakdown(runs)
    if sweep:
        _print_sweep(sweep, args)
    return 0


def _print_sweep(batches, args):
    """kiln 1 rank and 2 ranks at each batch size, interleaved rounds as above."""
    got = {(m, b, n): [] for m in MODELS for b in batches for n in (1, 2)}
    for _ in range(args.rounds):
        for model in MODELS:
            for b in batches:
                for n in (1, 2):
                    got[(model, b, n)].append(_launch("kiln", n, model, b, args.steps)["rate"])
    print(f"\nkiln 2 ranks / kiln 1 rank by samples per rank per step (median of "
          f"{args.rounds} rounds)")
    print("| model | " + " | ".join(str(b) for b in batches) + " |")
    print("| --- |" + " ---: |" * len(batches))
    for model in MODELS:
        ratios = [float(onp.median(got[(model, b, 2)])) / float(onp.median(got[(model, b, 1)]))
                  for b in batches]
        print(f"| {model} | " + " | ".join(f"{r:.2f}x" for r in ratios) + " |")


def _rates(runs, model, config):
    return [r["rate"] for r in runs[(model, config)]]


def _print(runs, configs, args):
    print(f"samples/s, {args.batch} samples per rank per step, 1 thread per rank, "
          f"{args.rounds} interleaved rounds of {args.steps} steps: median (best)")
    print("| model | " + " | ".join(f"{fw} x{n}" for fw, n in configs) + " |")
    print("| --- |" + " ---: |" * len(configs))
    for model in MODELS:
        cells = [f"{onp.median(_rates(runs, model, c)):,.0f} ({max(_rates(runs, model, c)):,.0f})"
                 for c in configs]
        print(f"| {model} | " + " | ".join(cells) + " |")
    for model in MODELS:
        one, two = _rates(runs, model, ("kiln", 1)), _rates(runs, model, ("kiln", 2))
        by_round = " ".join(f"{b / a:.2f}" for a, b in zip(one, two))
        line = (f"{model}: kiln 2 ranks / kiln 1 rank = {onp.median(two) / onp.median(one):.2f}x"
                f" (medians; best {max(two) / max(one):.2f}x; round by round {by_round})")
        if ("PyTorch DDP (gloo)", 2) in configs:
            ddp = _rates(runs, model, ("PyTorch DDP (gloo)", 2))
            line += (f", kiln 2 ranks / PyTorch DDP 2 ranks = "
                     f"{onp.median(two) / onp.median(ddp):.2f}x")
        apart = _rates(runs, model, APART)
        line += (f"; the machine's own scaling, 2 kiln jobs apart / 1 job = "
                 f"{onp.median(apart) / onp.median(one):.2f}x")
        print(line)


def _print_breakdown(runs):
    """Where kiln's step time goes, per rank: median over the rounds, in milliseconds."""
    print("\nkiln ms per step by rank (median of rounds): 1 rank | 2 ranks, each "
          "step = compute (with the sums read inside the update) + waiting for the other "
          "rank + summing gradients into a buffer")
    for model in MODELS:
        one = onp.median([r["per_rank"][0][0] for r in runs[(model, ("kiln", 1))]]) * 1e3
        parts = onp.median([r["per_rank"] for r in runs[(model, ("kiln", 2))]], axis=0) * 1e3
        ranks = "; ".join(f"rank {k}: {step:.2f} = {step - waiting - summing:.2f} + "
                          f"{waiting:.2f} + {summing:.2f}"
                          for k, (step, waiting, summing) in enumerate(parts))
        print(f"{model}: {one:.2f} | {ranks}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
