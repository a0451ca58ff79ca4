"""First-call latency of a hybridized seed MLP in a fresh process: cold and warm C cache."""
import argparse
import os
import subprocess
import sys
import tempfile

SCRIPT = r"""
import time
import kiln
from kiln import np
from kiln.gluon import nn
net = nn.HybridSequential()
net.add(nn.Dense(256, activation="relu"), nn.Dense(128, activation="relu"), nn.Dense(2))
net.initialize()
x = np.random.normal(size=(1, 512))
net.hybridize(backend="c")
start = time.perf_counter()
net(x).asnumpy()
first = time.perf_counter() - start
kind = type(next(iter(net._kiln_cached.entries.values())).program).__name__
print(first, kind)
"""


def _first_call(cache_dir):
    env = dict(os.environ, KILN_CACHE_DIR=cache_dir)
    res = subprocess.run([sys.executable, "-W", "ignore", "-c", SCRIPT], capture_output=True,
                         text=True, env=env, timeout=600)
    if res.returncode != 0:
        raise SystemExit(f"first-call measurement failed:\n{res.stderr}")
    seconds, kind = res.stdout.split()
    return float(seconds), kind


def report():
    with tempfile.TemporaryDirectory(prefix="kiln-bench-cache-") as cache:
        cold, kind = _first_call(cache)
        warm, _ = _first_call(cache)
    return ("### first call (trace + optimize + compile), seed MLP, batch 1, new process\n\n"
            "| cache | first call | program |\n| --- | ---: | --- |\n"
            f"| cold (empty KILN_CACHE_DIR) | {cold * 1e3:.0f} ms | {kind} |\n"
            f"| warm (compiled object on disk) | {warm * 1e3:.0f} ms | {kind} |\n")


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m kiln bench first_call",
        description="first call (trace, optimize, compile) of a hybridized seed MLP in a "
                    "new process, with an empty and with a warm compile cache")
    parser.parse_args(argv)
    print(report())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
