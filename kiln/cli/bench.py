"""`python -m kiln bench [NAME] [options]`: run a benchmark script from the checkout's bench/.

The scripts live beside the package in a source checkout (bench/NAME.py); they are kept
out of the installed package on purpose, since they import the peers they measure. A
benchmark is a script with a `main(argv)`; the other modules there (the harness, the
peers, shared models) are not listed and do not run.
"""
import importlib.util
import os
import re
import sys

BENCH_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "bench")


_MAIN = re.compile(r"^def main\(", re.M)


def runnable():
    """The benchmarks in bench/: the scripts that define main(argv), read, not imported
    (importing one loads the peers it measures)."""
    if not os.path.isdir(BENCH_DIR):
        return []
    names = []
    for f in sorted(os.listdir(BENCH_DIR)):
        if f.endswith(".py"):
            with open(os.path.join(BENCH_DIR, f), encoding="utf-8") as source:
                if _MAIN.search(source.read()):
                    names.append(f[:-3])
    return names


def main(argv):
    name = "mlp"
    if argv and not argv[0].startswith("-"):
        name, argv = argv[0], argv[1:]
    path = os.path.join(BENCH_DIR, f"{name}.py")
    available = runnable()
    if name not in available:
        print(f"kiln bench: no benchmark {name!r} in {BENCH_DIR}"
              + (f"; available: {', '.join(available)}" if available else
                 " (benchmarks run from a source checkout)"), file=sys.stderr)
        return 2
    sys.path.insert(0, BENCH_DIR)
    spec = importlib.util.spec_from_file_location(f"kiln_bench_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main(argv) or 0
