"""`python -m kiln fuzz`: generate programs, compare eager with both backends in a child
process, minimize what fails, and report counts and registry coverage."""
import argparse
import re
import threading
import time

from .child import Child
from .minimize import minimize

# the program forms the report counts (read off each program's source)
FORM_PATTERNS = {
    "in-place update": re.compile(r"^ +\w+ [-+*/]= ", re.M),
    "in-place on an argument": re.compile(r"^ +a\d [-+*/]= |^ +a\d\[", re.M),
    "slice/index assignment": re.compile(r"^ +\w+\[[^\n]*\] = ", re.M),
    "view then write": re.compile(r"^ +(v\d+) = [^\n]*(\.T|\[|reshape|expand_dims|split|"
                                  r"squeeze|swapaxes)[^\n]*\n +\1(\[\.\.\.\]| [-+*]=)", re.M),
    "cast": re.compile(r"\.astype\("),
    "if on an array": re.compile(r"^ +if ", re.M),
    "while on an array": re.compile(r"^ +while ", re.M),
    "Gluon block": re.compile(r"^blk\d+ = nn\.", re.M),
    "recurrent layer": re.compile(r"^blk\d+ = rnn\.", re.M),
    "loop over rows (foreach)": re.compile(r"npx\.foreach\("),
    "matmul family": re.compile(r"np\.(dot|matmul|inner|outer|tensordot)|npx\.batch_dot| @ "),
    "product": re.compile(r"np\.prod\(|\.prod\("),
    "activation of a 0-d value": re.compile(
        r"npx\.\w+\((\w+\.sum\(\) \* 0\.5|np\.max\(|\w+\.mean\(\)|1\.0 / \(np\.abs|"
        r"np\.linalg\.norm\(|\w+\.reshape\(-1\)\[0\])"),
    "attention": re.compile(r"npx\.attention\(|np\.matmul\(npx\.(masked_)?softmax\("),
    "normalization over the last axis": re.compile(r"npx\.(layer_norm|softmax|log_softmax)\("
                                                   r"[^\n]*axis=-1"),
    "if/while, then an in-place write": re.compile(
        r"^    (if|while) [^\n]*\n(        [^\n]*\n|    else:\n)+    \w+(\[[^\n]*\])? "
        r"([-+*/]= |= (?!=))", re.M),
}


class Report:
    def __init__(self):
        self.programs = self.mismatches = self.crashes = self.hangs = self.fallbacks = 0
        self.raising = self.explained = self.skipped = 0
        self.ops = set()
        self.forms = dict.fromkeys(FORM_PATTERNS, 0)
        self.failures = []       # one entry per failing program

    def coverage(self):
        from ..ops.registry import REGISTRY
        return sorted(self.ops & set(REGISTRY)), sorted(set(REGISTRY) - self.ops)

    def summary(self, seconds):
        covered, missing = self.coverage()
        lines = [f"kiln fuzz: {self.programs} programs in {seconds:.0f} s: "
                 f"{self.mismatches} mismatches, {self.crashes} crashes, {self.hangs} hangs"
                 + (f", {self.skipped} not generated (a generator error)" if self.skipped
                    else ""),
                 f"  eager fallbacks (documented, with a warning): {self.fallbacks}; programs "
                 f"where eager raises (compiled must raise the same class): {self.raising}; "
                 f"differences the documented semantics explain: {self.explained}",
                 f"  registry coverage: {len(covered)}/{len(covered) + len(missing)} ops"
                 + (f"; never generated: {', '.join(missing)}" if missing else " (all)"),
                 "  forms: " + ", ".join(f"{k} {v}" for k, v in self.forms.items())]
        return "\n".join(lines)


def _kinds(status, result):
    if status != "ok":
        return {(status,)}
    return {tuple(f[:2]) for f in result["findings"]}


def fuzz(minutes=1.0, seed=0, max_programs=None, do_minimize=True, out=print,
         max_minimized=5, progress_every=60.0, jobs=1, bfloat16=False):
    """Run the fuzzer (`jobs` child processes side by side); returns its Report."""
    report = Report()
    lock = threading.Lock()
    start = time.time()
    deadline = start + minutes * 60
    state = {"next": 0, "last": start}

    def take():
        with lock:
            if time.time() >= deadline or (max_programs is not None
                                           and state["next"] >= max_programs):
                return None
            state["next"] += 1
            return state["next"] - 1

    def work():
        child = Child()
        try:
            while (index := take()) is not None:
                status, source, result = child.run({"generate": [seed, index, 15, bfloat16]})
                with lock:
                    kinds = _record(report, status, source, result)
                    minimize_it = do_minimize and len(report.failures) < max_minimized
                    if kinds:
                        report.failures.append(None)     # reserve a place
                    if time.time() - state["last"] > progress_every:
                        state["last"] = time.time()
                        out(f"  ... {report.programs} programs, {report.mismatches} "
                            f"mismatches, {report.crashes} crashes, {len(report.ops)} ops seen")
                if kinds:
                    text = _report_failure(child, status, source, result, kinds, minimize_it)
                    with lock:
                        out(text)
        finally:
            child.close()

    threads = [threading.Thread(target=work) for _ in range(max(1, jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out(report.summary(time.time() - start))
    return report


def _record(report, status, source, result):
    """Count one program; returns its failure kinds (empty when it passed)."""
    report.programs += 1
    for name, pattern in FORM_PATTERNS.items():
        report.forms[name] += bool(source and pattern.search(source))
    if status == "ok" and result.get("skipped"):
        report.skipped += 1
    if status == "ok":
        report.ops.update(result["ops"])
        report.fallbacks += bool(result["fallbacks"])
        report.raising += bool(result.get("raised"))
        report.explained += bool(result.get("explained"))
    kinds = _kinds(status, result)
    if kinds:
        report.mismatches += status == "ok"
        report.crashes += status == "crash"
        report.hangs += status == "hang"
    return kinds


def _report_failure(child, status, source, result, kinds, do_minimize):
    """The failure's report: what differed, and the (minimized) program as a script."""
    detail = result.get("stderr") if status != "ok" else "\n".join(
        f"[{b}] {s}: {d}" for s, b, d in result["findings"])
    small = source
    if do_minimize and source:
        raised = result.get("raised") if status == "ok" else None

        def still_fails(candidate):
            # the same failure, and eager must not start raising (an undefined name, say)
            st, _, res = child.run({"source": candidate})
            if st == "ok" and (res.get("raised") != raised or res.get("skipped")):
                return False
            return bool(_kinds(st, res) & kinds)
        small = minimize(source, still_fails)
    return (f"\n=== {status}: {sorted(kinds)}\n{detail}\n--- reproducer (minimized; run it "
            f"with python):\n{small}")


def main(argv):
    parser = argparse.ArgumentParser(prog="python -m kiln fuzz",
                                     description="differential fuzzing: eager vs compiled")
    parser.add_argument("--minutes", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--programs", type=int, default=None, help="stop after this many")
    parser.add_argument("--no-minimize", action="store_true")
    parser.add_argument("--jobs", type=int, default=2,
                        help="child processes running programs side by side (default 2)")
    parser.add_argument("--bfloat16", action="store_true",
                        help="the stream whose operands may be bfloat16")
    args = parser.parse_args(argv)
    report = fuzz(args.minutes, args.seed, args.programs, not args.no_minimize,
                  out=lambda text: print(text, flush=True), jobs=args.jobs,
                  bfloat16=args.bfloat16)
    return 1 if report.mismatches or report.crashes or report.hangs else 0
