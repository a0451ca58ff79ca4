"""Run Apache MXNet's own unit tests against kiln (through the `mxnet` alias) and, as the
reference, against real MXNet; report per file and per cause.

    python tools/mxnet_suite.py --source /path/to/mxnet.git [--reference /venv/bin/python]
                                [--files test_ndarray.py ...] [--timeout 90] [--out DIR]

- `--source` is a git directory of apache/mxnet (bare is fine); the tests of `--rev`
  (default v1.9.x) are staged into a temporary folder at run time with `git archive`.
  Nothing of MXNet's is kept in this repository.
- kiln runs under the interpreter that runs this script; a conftest.py written into the
  staged folder installs the alias (`kiln.mx.alias.install()`) for that run only.
- `--reference` is a Python with `mxnet==1.9.1` installed (plus pytest, pytest-timeout,
  nose; see docs/mxnet/test-suite.md). Without it, only kiln's side is run.
- Every file runs in its own pytest process with a per-test timeout; a process killed by
  a signal counts as a crash of every test it had not finished.
- `--expected FILE` lists test ids kiln passed before (one per line, `file::test`): any of
  them not passing now is reported as a regression and the exit code is 1.

Needs pytest-timeout and nose in both interpreters (MXNet's tests import nose.tools).
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

TARGETS = (
    "test_ndarray.py", "test_symbol.py", "test_autograd.py", "test_gluon.py",
    "test_gluon_rnn.py", "test_gluon_data.py", "test_gluon_data_vision.py", "test_loss.py",
    "test_init.py", "test_metric.py", "test_io.py", "test_image.py", "test_recordio.py",
    "test_module.py", "test_optimizer.py", "test_numpy_ndarray.py", "test_operator.py",
    "test_sparse_ndarray.py", "test_sparse_operator.py")

UNITTEST = "tests/python/unittest"
# what the unittest files put on sys.path themselves: common/ (models.py, for common.py)
# and train/ (test_bucketing.py, for test_module.py)
SHARED = ("tests/python/common", "tests/python/train")

# Installed into the staged folder: the alias for kiln's runs, MXNet's markers for both.
CONFTEST = '''\
import os
if os.environ.get("MXNET_SUITE_IMPL") == "kiln":
    import kiln.mx.alias
    kiln.mx.alias.install()

def pytest_configure(config):
    for marker in ("seed", "serial", "remote_required", "gpu", "integration",
                   "onnx_coverage", "garbage_expected"):
        config.addinivalue_line("markers", marker + ": MXNet's marker")
'''


def stage(source, rev, dest):
    """Unpack MXNet's unittest folder of `rev` from the git directory `source` into dest."""
    archive = subprocess.run(["git", f"--git-dir={source}", "archive", rev, UNITTEST, *SHARED],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", dest], input=archive, check=True)
    folder = os.path.join(dest, UNITTEST)
    with open(os.path.join(folder, "conftest.py"), "w") as f:
        f.write(CONFTEST)
    with open(os.path.join(folder, "pytest.ini"), "w") as f:
        f.write("[pytest]\n")          # stops pytest from reading this repository's settings
    return folder


def kiln_under_test(folder):
    """The kiln package the test processes import (an installed one or PYTHONPATH's tree):
    a run that measured some other checkout than meant says so in its first line."""
    proc = subprocess.run([sys.executable, "-c", "import kiln; print(kiln.__file__)"],
                          cwd=folder, capture_output=True, text=True)
    if proc.returncode:
        return "none importable: " + (proc.stderr.strip().splitlines() or ["?"])[-1]
    return os.path.dirname(proc.stdout.strip())


def run_file(python, impl, folder, name, timeout, out_dir):
    """One pytest process for one test file; returns {test id: (outcome, message)}."""
    report = os.path.join(out_dir, f"{impl}-{name}.xml")
    env = dict(os.environ, MXNET_SUITE_IMPL=impl, PYTHONHASHSEED="0",
               OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "2"))
    if impl == "mxnet":
        env.pop("PYTHONPATH", None)        # kiln's tree must not shadow anything there
    cmd = [python, "-m", "pytest", name, "-q", "-p", "no:cacheprovider", "-rN",
           f"--timeout={timeout}", f"--junitxml={report}", "-o", "junit_family=xunit1"]
    started = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True,
                              timeout=max(600, timeout * 200))
        code, tail = proc.returncode, (proc.stdout + proc.stderr)[-2000:]
    except subprocess.TimeoutExpired:
        code, tail = "timeout", ""
    results = read_junit(report) if os.path.exists(report) else {}
    # pytest exits 0-5 by itself (2: a collection error); anything else is a signal or a hang
    crashed = not isinstance(code, int) or not 0 <= code <= 5
    if crashed and not results:
        results[f"{name}::<collection>"] = ("crash", f"exit {code}: {tail.splitlines()[-1:]}")
    elif crashed:
        results[f"{name}::<process>"] = ("crash", f"exit {code}")
    return results, time.monotonic() - started


def read_junit(path):
    """{file::test: (passed|failed|error|skipped, first line of the message)}."""
    results = {}
    for case in ET.parse(path).iter("testcase"):
        module = case.get("classname", "").split(".")[0]
        if module:
            test_id = f"{module}.py::{case.get('name')}"
        else:                       # the file failed to import: pytest names no class
            test_id = f"{case.get('file')}::<collection>"
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed"}.get(child.tag, child.tag)
                message = first_line(child.get("message") or child.text or "")
                break
        results[test_id] = (outcome, message)
    return results


def first_line(message):
    return next((line.strip() for line in message.splitlines() if line.strip()), "")


def cause_of(message):
    """Group failure messages: numbers, addresses and quoted values are not the cause."""
    text = re.sub(r"0x[0-9a-f]+", "0x?", message)
    text = re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "N", text)
    return text[:160]


def compare(kiln, reference):
    """Per file: tests MXNet passed, kiln passed, both; and causes of kiln's misses."""
    table, causes = {}, collections.Counter()
    files = sorted({t.split("::")[0] for t in list(kiln) + list(reference)})
    for name in files:
        ref_pass = {t for t, (o, _) in reference.items() if o == "passed" and t.startswith(name)}
        kiln_pass = {t for t, (o, _) in kiln.items() if o == "passed" and t.startswith(name)}
        table[name] = {"mxnet": len(ref_pass), "kiln": len(kiln_pass),
                       "both": len(ref_pass & kiln_pass)}
        for test in sorted(ref_pass - kiln_pass):
            outcome, message = kiln.get(test) or kiln.get(f"{name}::<collection>",
                                                          ("missing", "not collected"))
            causes[f"{outcome}: {cause_of(message)}"] += 1
    return table, causes


def _passed(results):
    return sum(outcome == "passed" for outcome, _ in results.values())


def markdown(table):
    rows = ["| file | MXNet 1.9.1 passed | kiln passed | both |", "| --- | ---: | ---: | ---: |"]
    total = collections.Counter()
    for name, row in table.items():
        rows.append(f"| {name} | {row['mxnet']} | {row['kiln']} | {row['both']} |")
        total.update(row)
    rows.append(f"| **all** | {total['mxnet']} | {total['kiln']} | {total['both']} |")
    return "\n".join(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", required=True, help="git directory of apache/mxnet")
    parser.add_argument("--rev", default="v1.9.x")
    parser.add_argument("--reference", help="a Python with mxnet 1.9.1 installed")
    parser.add_argument("--files", nargs="*", default=list(TARGETS))
    parser.add_argument("--timeout", type=int, default=90, help="seconds per test")
    parser.add_argument("--out", default=None, help="folder for the reports (default: temp)")
    parser.add_argument("--reuse-reference",
                        help="a previous results.json to take MXNet's side from")
    parser.add_argument("--expected", help="file of test ids kiln passed before")
    args = parser.parse_args(argv)

    out_dir = args.out or tempfile.mkdtemp(prefix="mxnet-suite-")
    os.makedirs(out_dir, exist_ok=True)
    staged = stage(args.source, args.rev, tempfile.mkdtemp(prefix="mxnet-tests-"))
    previous = {}
    if args.reuse_reference:
        with open(args.reuse_reference) as f:
            previous = {k: tuple(v) for k, v in json.load(f)["mxnet"].items()}
    print(f"kiln under test: {kiln_under_test(staged)} (run by {sys.executable})", flush=True)
    kiln, reference = {}, {}
    for name in args.files:
        got, seconds = run_file(sys.executable, "kiln", staged, name, args.timeout, out_dir)
        kiln.update(got)
        line = f"{name}: kiln {_passed(got)} passed ({seconds:.0f} s)"
        if args.reference:
            got, seconds = run_file(args.reference, "mxnet", staged, name, args.timeout, out_dir)
            reference.update(got)
            line += f", MXNet {_passed(got)} passed ({seconds:.0f} s)"
        else:
            reference.update({t: v for t, v in previous.items() if t.startswith(name + "::")})
        print(line, flush=True)

    table, causes = compare(kiln, reference)
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump({"kiln": kiln, "mxnet": reference, "table": table,
                   "causes": causes.most_common()}, f, indent=1)
    print(markdown(table))
    print("\nkiln's misses among MXNet's passes, by cause:")
    for cause, count in causes.most_common(40):
        print(f"{count:5d}  {cause}")
    print(f"\nreports: {out_dir}")

    if args.expected:
        with open(args.expected) as f:
            expected = {line.strip() for line in f if line.strip() and not line.startswith("#")}
        lost = sorted(t for t in expected if kiln.get(t, ("missing",))[0] != "passed"
                      and t.split("::")[0] in args.files)
        for test in lost:
            print(f"REGRESSION {test}: {kiln.get(test, ('missing', ''))}")
        return 1 if lost else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
