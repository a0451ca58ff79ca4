"""Benchmark: the seed MLP (512-256-128-2) at batch 1, 64 and 1024, kiln vs peers.

python -m kiln bench [--quick] [--no-compile]
Prints markdown tables: kiln eager, kiln hybridized per backend, and every installed peer,
timed side by side in one process, with ratios to kiln's fastest hybridized backend.
"""
import argparse
import os
import sys

import numpy as onp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import peers  # noqa: E402
import first_call  # noqa: E402

import kiln  # noqa: E402
from kiln import np  # noqa: E402
from kiln.gluon import nn  # noqa: E402


def get_net():
    net = nn.HybridSequential()
    net.add(nn.Dense(256, activation="relu"), nn.Dense(128, activation="relu"), nn.Dense(2))
    net.initialize()
    return net


def weights_of(net, x):
    net(x)
    return [(layer.weight.data().asnumpy(), layer.bias.data().asnumpy()) for layer in net]


def kiln_rows(x, backends):
    rows = []
    net = get_net()
    out_eager = net(x).asnumpy()
    rows.append(("kiln eager", lambda: net(x), ""))
    for backend in backends:
        hnet = get_net()
        for a, b in zip(hnet.collect_params().values(), net.collect_params().values()):
            a.set_data(b.data())
        hnet.hybridize(backend=backend)
        out = hnet(x).asnumpy()
        if not onp.allclose(out, out_eager, rtol=1e-4, atol=1e-5):
            raise SystemExit(f"kiln hybridized ({backend}) disagrees with eager")
        rows.append((f"kiln hybridized ({backend})", lambda hnet=hnet: hnet(x), ""))
    return rows, net


def dense_line():
    """Where the compiled Dense layers of 8 rows and more run."""
    from kiln.backend import dnnl
    from kiln.backend.c.dnnl_dense import DNNL_MIN_ROWS
    if not dnnl.available():
        return f"oneDNN off ({dnnl.unavailable_reason()})"
    return f"Dense layers from {DNNL_MIN_ROWS} rows on oneDNN's matmul, blocks in kiln's pool"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m kiln bench")
    parser.add_argument("--batches", default="1,64,1024")
    parser.add_argument("--quick", action="store_true", help="shorter timing rounds")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    args = parser.parse_args(argv)
    from kiln.backend import BACKENDS
    backends = list(BACKENDS)
    min_time = 0.05 if args.quick else 0.3
    print(f"kiln {kiln.__version__} benchmark: seed MLP 512-256-128-2, float32, CPU; "
          f"{harness.setup_line()}; {dense_line()}; load average {os.getloadavg()[0]:.1f}\n")
    for batch in [int(b) for b in args.batches.split(",")]:
        np.random.seed(0)
        x = np.random.normal(size=(batch, 512))
        rows, net = kiln_rows(x, backends)
        weights = weights_of(net, x)
        xv = x.asnumpy()
        rows.append(("plain NumPy", peers.numpy_reference(weights, xv), "reference loop"))
        rows += peers.torch_peers(weights, xv, with_compile=not args.no_compile)
        rows += peers.jax_peers(weights, xv)
        rows += peers.onnxruntime_peers(weights, xv)
        timed = harness.side_by_side(rows, min_time=min_time)
        hybrid = [t for t in timed if t[0].startswith("kiln hybridized")]
        ref = min(hybrid, key=lambda t: t[1])[0]
        print(harness.markdown_table(f"batch {batch}", timed, ref))
        print()
    if "c" in backends:
        print(first_call.report())


if __name__ == "__main__":
    main()
