"""The ring-allreduce cost model: projected step time and scaling efficiency at scale.

    python -m kiln bench allreduce_model [--compute-ms MLP LENET] [--batch B]

Ring allreduce of S bytes over N workers, link bandwidth W, per-message latency a:
    t(N) = 2 (N - 1) / N * S / W  +  2 (N - 1) * a        (per message; kiln sends one
                                                            message per gradient bucket)
Weak scaling (B samples per worker per step), compute time c per step measured here with
one rank and one thread (`bench dist`'s kiln x1 configuration, unless given):
    step(N) = c + t(N)            if communication does not overlap compute (the bound
                                  for the bucket whose gradient comes last)
    step(N) = max(c, t(N))        with perfect overlap (the bound DDP's bucketing aims at)
    efficiency = c / step(N)
See bench/allreduce_model.md for what the numbers say and what changes at that scale.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

WORKERS = (8, 64, 512)
# (name, bits per second, latency per message in seconds): a 25 Gbit/s Ethernet with a
# TCP stack, and a 100 Gbit/s RDMA fabric (InfiniBand / RoCE)
NETWORKS = (("25 Gbit/s", 25e9, 10e-6), ("100 Gbit/s", 100e9, 2e-6))


def gradient_buckets(model):
    """Bytes per allreduce message of `model`'s gradients, as kiln's Trainer buckets them."""
    import dist
    from kiln.distributed import buckets
    net = dist._kiln_net(model)
    grads = [p.data() for p in net.collect_params().values() if p.grad_req != "null"]
    return [sum(grads[i].size * grads[i].dtype.itemsize for i in b)
            for b in buckets.plan(grads)]


def ring_seconds(message_bytes, workers, bits_per_second, latency):
    n = workers
    return sum(2 * (n - 1) / n * s * 8 / bits_per_second + 2 * (n - 1) * latency
               for s in message_bytes)


def measured_compute_ms(model, batch, steps=60):
    import dist
    samples_per_second = dist._launch("kiln", 1, model, batch, steps)
    return 1e3 * batch / samples_per_second


def table(model, compute_ms, batch):
    messages = gradient_buckets(model)
    lines = [f"{model}: {sum(messages) / 1e6:.2f} MB of gradients in {len(messages)} "
             f"messages; compute {compute_ms:.2f} ms per step at {batch} samples per worker",
             "| workers | network | allreduce | step (no overlap) | efficiency "
             "| step (full overlap) | efficiency |",
             "| ---: | --- | ---: | ---: | ---: | ---: | ---: |"]
    c = compute_ms / 1e3
    for n in WORKERS:
        for name, bps, latency in NETWORKS:
            t = ring_seconds(messages, n, bps, latency)
            serial, overlap = c + t, max(c, t)
            lines.append(f"| {n} | {name} | {t * 1e3:.2f} ms | {serial * 1e3:.2f} ms "
                         f"| {c / serial:.0%} | {overlap * 1e3:.2f} ms | {c / overlap:.0%} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m kiln bench allreduce_model")
    parser.add_argument("--compute-ms", type=float, nargs=2, metavar=("MLP", "LENET"),
                        help="compute ms per step (default: measure kiln x1 now)")
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args(argv)
    for k, model in enumerate(("mlp", "lenet")):
        ms = (args.compute_ms[k] if args.compute_ms else
              measured_compute_ms(model, args.batch))
        print(table(model, ms, args.batch))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
