"""The fuzzer's child process: runs programs and answers on stdout, one JSON line each.

Requests (one JSON object per stdin line):
  {"generate": [seed, index, max_statements, bfloat16]}   generate that program, then run it
  {"source": text}              run this program source (the minimizer's candidates)
Before running, the worker writes {"program": source}, so the parent still knows what ran
when the process dies in the middle (a crash); then {"result": ...}.
"""
import importlib.util
import json
import os
import sys
import tempfile
import time
import warnings


def load(source, directory, name):
    """Import a program's source as a module (hybridize reads the function's source to
    convert its control flow, so it must live in a file)."""
    path = os.path.join(directory, name + ".py")
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_applied = set()


def record_applied_ops():
    """Note every primitive applied (eagerly or while tracing): with the traced graphs'
    ops, this is the registry coverage the fuzzer reports (a `full` is never a traced
    node, for instance: it has no array inputs, so it becomes a constant at once)."""
    from .._core import primitive
    apply = primitive._apply()

    def recording(prim, args, attrs):
        _applied.add(prim.name)
        return apply(prim, args, attrs)
    primitive._dispatch[0] = recording


def run_source(source, directory, name):
    from .compare import compare
    start = time.time()
    observe = {}
    _applied.clear()
    try:
        module = load(source, directory, name)
        module.f    # noqa: B018 -- a generator failure leaves a comment, no program
    except Exception as exc:     # noqa: BLE001 -- a program whose set-up fails is skipped
        return {"findings": [], "ops": [], "fallbacks": 0, "skipped": repr(exc)[:300],
                "seconds": time.time() - start}
    findings = compare(module.f, module.ARGS, module.NEW_ARGS, observe=observe, sizes=True)
    return {"findings": [[f.stage, f.backend, f.detail] for f in findings],
            "ops": sorted(observe["ops"] | _applied), "fallbacks": observe["fallbacks"],
            "raised": observe.get("eager_raised"), "explained": observe.get("explained", 0),
            "seconds": time.time() - start}


def main():
    from .generate import generate
    warnings.simplefilter("ignore")
    record_applied_ops()
    out = sys.stdout
    sys.stdout = sys.stderr          # stray prints of a program must not break the protocol
    with tempfile.TemporaryDirectory(prefix="kiln-fuzz-") as directory:
        sys.path.insert(0, directory)
        for k, line in enumerate(sys.stdin):
            request = json.loads(line)
            if "generate" in request:
                try:
                    source = generate(*request["generate"]).source()
                except Exception as exc:    # noqa: BLE001 -- a generator bug, reported
                    source = f"# the generator failed: {exc!r}\n"
            else:
                source = request["source"]
            out.write(json.dumps({"program": source}) + "\n")
            out.flush()
            result = run_source(source, directory, f"kiln_fuzz_prog{k}")
            out.write(json.dumps({"result": result}) + "\n")
            out.flush()


if __name__ == "__main__":
    main()
