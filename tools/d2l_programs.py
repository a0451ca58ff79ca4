"""How many programs hybridize traces for d2l chapters, and why each trace was needed.

    python tools/d2l_programs.py DIR_WITH_MD_FILES --out SCRATCH --only seq2seq
                                 [--epochs-cap 2] [--smoke 4] [--verbose] [--static-shape]

The chapters are run as tools/d2l_chapters.py runs them (same prelude, stand-in data,
epoch cap; by default --smoke 4: at most 4 batches per epoch, so the last smaller batch of
an epoch is not met unless --smoke 0), with one addition: the book never calls
hybridize, so every Gluon Block called at the top level (not from inside another block's
call) is hybridized, with default flags, just before its first call: `block.hybridize()`,
which hybridizes every HybridBlock under it (Dense, Embedding, GRU, LayerNorm, ...), as
MXNet's Block.hybridize does (`--static-shape`: `hybridize(static_shape=True)`, one program
per input shape, the count before sizes could be symbolic). The d2l models are plain
Blocks, so their layers are what compiles. Losses stay eager: d2l makes a new loss block
at every loss call, and a program compiled for an object called once measures nothing.
Without a GPU, d2l.try_all_gpus() returns [cpu()] (the BERT chapters split each batch
over it).

At exit each section prints, per hybridized block (its path under the top-level block),
the traces made (every trace and compile, a symbolic attempt that failed included), the
programs it holds (`kiln.programs`) and, with --verbose, the shape policy's build log:
each signature built and why no earlier program served it. Then the totals:

    D2L-PROGRAMS traces=27 programs=25 blocks=9

The table (section, traces, programs, the most frequent reasons) is printed and appended
to SCRATCH/programs.md; the full per-trace log is in SCRATCH/logs/NAME.txt.
"""
import argparse
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from d2l_chapters import build_script, run_section, selected  # noqa: E402
from d2l_stand_ins import write_stand_in_data  # noqa: E402

HYBRIDIZE = '''
def _hybridize_top_level_blocks(verbose):
    """Hybridize each top-level Block before its first call; report its programs at exit."""
    import atexit
    from collections import Counter
    import kiln
    from kiln._core import trace
    from kiln.gluon.block import Block, HybridBlock, _deref
    from kiln.gluon.loss import Loss
    from kiln.hybrid.cached import CachedFunction
    roots = []
    plain_call = Block.__call__
    build_for = CachedFunction._build_for
    def counted_build_for(self, *args, **kwargs):   # every trace, failed ones included
        self.__dict__["d2l_traces"] = self.__dict__.get("d2l_traces", 0) + 1
        return build_for(self, *args, **kwargs)
    CachedFunction._build_for = counted_build_for
    def call(self, *args, **kwargs):
        if not trace.active() and not self.__dict__.get("_d2l_roots_seen") \\
                and not _depth[0] and not isinstance(self, Loss):
            self.__dict__["_d2l_roots_seen"] = True
            self.hybridize(static_shape=STATIC_SHAPE)
            roots.append(self)
        _depth[0] += 1
        try:
            return plain_call(self, *args, **kwargs)
        finally:
            _depth[0] -= 1
    _depth = [0]
    Block.__call__ = call
    def walk(block, path, seen):
        if id(block) in seen:
            return
        seen.add(id(block))
        yield path, block
        for name, child in block._children.items():
            yield from walk(_deref(child), f"{path}.{name}", seen)
    def report():
        traces = programs = blocks = 0
        reasons = Counter()
        seen = set()
        for k, root in enumerate(roots):
            for path, block in walk(root, f"{type(root).__name__}#{k}", seen):
                cached = block.__dict__.get("_kiln_cached")
                if not isinstance(block, HybridBlock) or cached is None:
                    continue
                builds = getattr(cached.policy, "builds", [])   # kiln's build log
                n_traces = cached.__dict__.get("d2l_traces", 0)
                n_programs = len(kiln.programs(block))
                blocks += 1
                traces += n_traces
                programs += n_programs
                print(f"D2L-BLOCK {path} ({type(block).__name__}): {n_traces} trace(s), "
                      f"{n_programs} program(s)", flush=True)
                for b in builds:
                    reasons[b.why.split(":")[0]] += 1
                    if verbose:
                        print(f"    {b}", flush=True)
        for why, n in reasons.most_common():
            print(f"D2L-REASON {n} {why}", flush=True)
        print(f"D2L-PROGRAMS traces={traces} programs={programs} blocks={blocks}", flush=True)
    atexit.register(report)

def _cpu_when_no_gpu():
    """The BERT chapters split each batch over d2l.try_all_gpus(), empty without a GPU:
    it returns [cpu()] then, as d2l.try_gpu() falls back to the CPU."""
    from d2l import mxnet as d2l
    every_gpu = d2l.try_all_gpus
    d2l.try_all_gpus = lambda: every_gpu() or [d2l.cpu()]

_hybridize_top_level_blocks(VERBOSE)
_cpu_when_no_gpu()
del _hybridize_top_level_blocks, _cpu_when_no_gpu
'''


def script_with_hybridize(markdown, cap, smoke, verbose, static_shape=False):
    """The section's script with every top-level block hybridized; None for a section
    without MXNet code (the vision transformer's, say)."""
    script = build_script(markdown, cap, smoke)
    if "# ---- cell 0" not in script:
        return None
    head, cells = script.split("# ---- cell 0", 1)
    prelude = HYBRIDIZE.replace("VERBOSE", str(bool(verbose))).replace(
        "STATIC_SHAPE", str(bool(static_shape)))
    return head + prelude + "\n# ---- cell 0" + cells


def counts(log_text):
    found = re.search(r"^D2L-PROGRAMS traces=(\d+) programs=(\d+) blocks=(\d+)", log_text, re.M)
    reasons = re.findall(r"^D2L-REASON (\d+) (.*)$", log_text, re.M)
    return (tuple(int(g) for g in found.groups()) if found else None), reasons


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("chapters", help="folder holding the chapters' .md files")
    parser.add_argument("--out", required=True, help="scratch folder (outside the repo)")
    parser.add_argument("--only", action="append", required=True,
                        help="sections to run (as tools/d2l_chapters.py --only)")
    parser.add_argument("--epochs-cap", type=int, default=2)
    parser.add_argument("--smoke", type=int, default=4, metavar="N",
                        help="at most N batches per epoch (0: every batch)")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--verbose", action="store_true", help="log every trace")
    parser.add_argument("--static-shape", action="store_true",
                        help="hybridize(static_shape=True): one program per input shape, "
                             "as before sizes could be symbolic (the count to compare with)")
    args = parser.parse_args(argv)
    scratch = os.path.abspath(args.out)
    for sub in ("scripts", "logs", "work"):
        os.makedirs(os.path.join(scratch, sub), exist_ok=True)
    write_stand_in_data(scratch, (60000, 10000))
    rows = ["| section | status | traces | programs | blocks | wall s | why traced (count) |",
            "| --- | --- | ---: | ---: | ---: | ---: | --- |"]
    for root, _, files in sorted(os.walk(args.chapters)):
        for fname in sorted(files):
            chapter = os.path.basename(root)
            name = f"{chapter}.{fname[:-3]}"
            if not fname.endswith(".md") or not any(selected(name, o) for o in args.only):
                continue
            with open(os.path.join(root, fname), encoding="utf-8") as f:
                script = script_with_hybridize(f.read(), args.epochs_cap, args.smoke,
                                               args.verbose, args.static_shape)
            if script is None:
                continue
            status, wall, _, error, _ = run_section(name, script, scratch, args.timeout)
            with open(os.path.join(scratch, "logs", f"{name}.txt")) as f:
                found, reasons = counts(f.read())
            t, p, b = found or ("?", "?", "?")
            why = "; ".join(f"{w} ({n})" for n, w in reasons) or error.replace("|", "/")
            row = f"| {name} | {status} | {t} | {p} | {b} | {wall:.1f} | {why} |"
            print(row, flush=True)
            rows.append(row)
    with open(os.path.join(scratch, "programs.md"), "a") as f:
        f.write(f"\n## {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, epochs capped "
                f"at {args.epochs_cap}, smoke {args.smoke}\n\n" + "\n".join(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
