"""`python -m kiln bench [NAME] [options]`: run a benchmark script from the checkout's bench/.

The scripts live beside the package in a source checkout (bench/NAME.py); they are kept
out of the installed package on purpose, since they import the peers they measure.
"""
import importlib.util
import os
import sys

BENCH_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "bench")


def main(argv):
    name = "mlp"
    if argv and not argv[0].startswith("-"):
        name, argv = argv[0], argv[1:]
    path = os.path.join(BENCH_DIR, f"{name}.py")
    if not os.path.exists(path):
        available = sorted(f[:-3] for f in os.listdir(BENCH_DIR) if f.endswith(".py")
                           and f not in ("harness.py", "peers.py")) if os.path.isdir(
            BENCH_DIR) else []
        print(f"kiln bench: no benchmark {name!r} in {BENCH_DIR}"
              + (f"; available: {', '.join(available)}" if available else
                 " (benchmarks run from a source checkout)"), file=sys.stderr)
        return 2
    sys.path.insert(0, BENCH_DIR)
    spec = importlib.util.spec_from_file_location(f"kiln_bench_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main(argv) or 0
