"""Run the MXNet code of d2l-en chapter sources on kiln, one section per fresh process.

    python tools/d2l_chapters.py DIR_WITH_MD_FILES --out SCRATCH [--epochs-cap 2]
                                 [--only NAME] [--timeout 600] [--budget 300]

Each `*.md` under DIR (searched recursively) is one section. Its code cells
(```{.python .input}) that belong to the MXNet tab, in order, become SCRATCH/scripts/NAME.py
after a prelude; the script runs as `python -m kiln mxnet NAME.py` (kiln standing in for
`mxnet`) with cwd SCRATCH/work, so the book's `../data` is SCRATCH/data. Results go to
SCRATCH/results.md (a markdown table) and SCRATCH/logs/NAME.txt.

The prelude changes nothing in the chapter's code. It
- draws with matplotlib's Agg backend and defines `tab` (d2lbook's tab selector) as MXNet;
- caps training at --epochs-cap epochs by wrapping d2l's entry points (`d2l.Trainer`'s
  max_epochs and every d2l function with a `num_epochs` parameter) and by capping a
  cell's top-level `num_epochs = N` (the count of the loops some chapters write
  themselves); other loops a chapter writes itself run as written;
- sets pandas (3.x) to read text columns as dtype object, and lets matplotlib's `stem`
  take `use_line_collection` (removed in 3.8), as the versions the book was written for did;
- lets `d2l.download` return a stand-in file already in the target folder without its
  SHA-1 check (the stand-ins are synthetic), and sets KILN_DATASET_VERIFY=0 so kiln's
  dataset loaders accept stand-ins in the real formats.

Stand-in data (tools/d2l_stand_ins.py; written once per SCRATCH, outside the timed run)
has the real sizes and formats: Fashion-MNIST (balanced classes, as the real one) and MNIST
as gzip IDX (60k/10k 28x28 by default, --images for smaller ones), the banana detection set
as the book's zip (1,000/100 PNGs of 256x256, one box each) and the book's img/banana.jpg, The Time
Machine's size in English-like text, 150,000 English-French pairs as fra-eng.zip, Kaggle
house prices as CSV (1460/1459 rows, 81/80 columns).

The chapter sources are someone else's: keep them and SCRATCH outside the repository.
"""
import argparse
import ast
import os
import re
import resource
import signal
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))
from d2l_stand_ins import write_stand_in_data  # noqa: E402  (tools/ is on sys.path)

CELL = re.compile(r"^```\{\.python \.input[^}]*\}\s*\n(.*?)^```", re.S | re.M)
TAB_MARK = re.compile(r"^\s*(%%tab|#@tab)\s+(.*)$")

PRELUDE = '''\
import os, sys, inspect, functools
import matplotlib
matplotlib.use("Agg")
os.environ.setdefault("KILN_DATASET_VERIFY", "0")

class _Tab:
    """d2lbook's tab selector, with MXNet the one tab selected."""
    def selected(self, *names):
        return "mxnet" in names or "all" in names
    def interact_select(self, *args, **kwargs):
        pass
tab = _Tab()

def _show(value):
    if value is not None:
        print(repr(value))

def _cap_epochs(cap):
    from d2l import mxnet as d2l
    init = d2l.Trainer.__init__
    @functools.wraps(init)
    def capped_init(self, max_epochs, *args, **kwargs):
        init(self, min(max_epochs, cap), *args, **kwargs)
    d2l.Trainer.__init__ = capped_init
    for name, fn in list(vars(d2l).items()):
        if not inspect.isfunction(fn):
            continue
        params = list(inspect.signature(fn).parameters)
        if "num_epochs" not in params:
            continue
        index = params.index("num_epochs")
        def capped(*args, _fn=fn, _index=index, **kwargs):
            if "num_epochs" in kwargs:
                kwargs["num_epochs"] = min(kwargs["num_epochs"], cap)
            elif len(args) > _index:
                args = args[:_index] + (min(args[_index], cap),) + args[_index + 1:]
            return _fn(*args, **kwargs)
        setattr(d2l, name, functools.wraps(fn)(capped))

def _local_download():
    from d2l import mxnet as d2l
    real = d2l.download
    def download(url, folder="../data", sha1_hash=None):
        if not url.startswith("http"):
            url, sha1_hash = d2l.DATA_HUB[url]
        fname = os.path.join(folder, url.split("/")[-1])
        if os.path.exists(fname):   # a stand-in: its SHA-1 is not the book's
            return fname
        return real(url, folder, sha1_hash)
    d2l.download = download

def _smoke(batches):
    """Each epoch sees at most `batches` batches. The times of the training steps after the
    first (which builds and compiles) are printed at exit as SMOKE-STEPS: the time from
    one training batch to the next is one step (data, forward, backward, update)."""
    import atexit, itertools, time
    from d2l import mxnet as d2l
    steps = []
    class Few:
        def __init__(self, loader, timed=False):
            self.loader, self.timed = loader, timed
        def __iter__(self):
            batches_ = itertools.islice(iter(self.loader), batches)
            if not self.timed:
                return batches_
            return self._timed(batches_)
        def _timed(self, batches_):
            for batch in batches_:
                start = time.perf_counter(), time.process_time()
                yield batch
                steps.append((time.perf_counter() - start[0], time.process_time() - start[1]))
        def __len__(self):
            return min(batches, len(self.loader))
    def report():
        timed = steps[1:]
        if timed:
            wall = sorted(w for w, _ in timed)[len(timed) // 2]
            cpu = sorted(c for _, c in timed)[len(timed) // 2]
            print(f"SMOKE-STEPS {{len(timed)}} median wall {{wall:.3f}} s, process CPU "
                  f"{{cpu:.3f}} s per training step", flush=True)
    atexit.register(report)
    prepare = d2l.Trainer.prepare_data
    def prepare_data(self, data):
        prepare(self, data)
        self.train_dataloader = Few(self.train_dataloader, timed=True)
        if self.val_dataloader is not None:
            self.val_dataloader = Few(self.val_dataloader)
        self.num_train_batches = len(self.train_dataloader)
    d2l.Trainer.prepare_data = prepare_data

def _pandas_as_in_the_book():
    """The book was written for pandas < 3, where text columns have dtype object
    (`dtypes != 'object'` selects the numeric ones); pandas 3 infers `str`."""
    import warnings
    try:
        import pandas
    except ImportError:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            pandas.set_option("future.infer_string", False)
        except (KeyError, ValueError):
            pass

def _matplotlib_as_in_the_book():
    """The book passes stem(use_line_collection=True), which matplotlib 3.8 removed (line
    collections became the only behaviour)."""
    import matplotlib.pyplot as plt
    stem = plt.stem
    def compatible_stem(*args, use_line_collection=True, **kwargs):
        return stem(*args, **kwargs)
    plt.stem = compatible_stem

def _real_mxnet_accepts_stand_ins():
    """Real MXNet re-downloads a dataset file whose SHA-1 is not the book's; the stand-ins'
    sums differ (kiln's loaders take KILN_DATASET_VERIFY=0 instead)."""
    import mxnet.gluon.utils as utils
    import mxnet.gluon.data.vision.datasets as datasets
    def check_sha1(filename, sha1_hash):
        return os.path.exists(filename)
    utils.check_sha1 = datasets.check_sha1 = check_sha1

def _report_peak_memory():
    import atexit, resource
    atexit.register(lambda: print("PEAK-RSS-MB", resource.getrusage(
        resource.RUSAGE_SELF).ru_maxrss // 1024, flush=True))

_report_peak_memory()
_cap_epochs({cap})
if {real_mxnet}:
    _real_mxnet_accepts_stand_ins()
_local_download()
_pandas_as_in_the_book()
_matplotlib_as_in_the_book()
if {smoke}:
    _smoke({smoke})
del (_report_peak_memory, _cap_epochs, _local_download, _smoke, _real_mxnet_accepts_stand_ins,
     _pandas_as_in_the_book, _matplotlib_as_in_the_book)
'''


def cells_for_mxnet(markdown):
    """The source of each MXNet cell, in order, with notebook magics removed."""
    out = []
    for body in CELL.findall(markdown):
        lines = body.splitlines()
        tabs = {"all"}
        for i, line in enumerate(lines):
            mark = TAB_MARK.match(line)
            if mark:
                tabs = {t.strip() for t in mark.group(2).split(",")}
                lines[i] = ""
                break
            if line.strip() and not line.startswith("%"):
                break
        if not tabs & {"mxnet", "all"}:
            continue
        code = [ln for ln in lines if not ln.lstrip().startswith(("%", "!"))
                and not ln.strip().startswith("tab.interact_select")]
        out.append("\n".join(code))
    return out


def show_last_expression(cell):
    """Print a cell's last bare expression, as a notebook shows it."""
    try:
        tree = ast.parse(cell)
    except SyntaxError:
        return cell  # let the run report it, with its line
    if not tree.body or not isinstance(tree.body[-1], ast.Expr):
        return cell
    last = tree.body[-1]
    lines = cell.splitlines()
    if lines[last.end_lineno - 1][last.end_col_offset:].lstrip().startswith(";"):
        return cell  # a trailing `;` tells the notebook not to show the value
    start, end = last.lineno - 1, last.end_lineno
    expr = "\n".join(lines[start:end])
    return "\n".join(lines[:start] + [f"_show((\n{expr.strip()}\n))"] + lines[end:])


def cap_epoch_assignments(cell, cap):
    """`num_epochs = 20` (alone or in a tuple, `num_epochs, timer = 20, d2l.Timer()`) at a
    cell's top level becomes `min(20, cap)`: the loops a chapter writes itself (SSD's)
    count their epochs that way."""
    try:
        tree = ast.parse(cell)
    except SyntaxError:
        return cell
    found = []
    for stmt in tree.body:
        if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
            continue
        target, value = stmt.targets[0], stmt.value
        pairs = [(target, value)]
        if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) \
                and len(target.elts) == len(value.elts):
            pairs = list(zip(target.elts, value.elts))
        found += [v for t, v in pairs if isinstance(t, ast.Name) and t.id == "num_epochs"
                  and isinstance(v, ast.Constant) and type(v.value) is int]
    lines = cell.splitlines()
    for v in sorted(found, key=lambda v: (v.lineno, v.col_offset), reverse=True):
        line = lines[v.lineno - 1]
        lines[v.lineno - 1] = (line[:v.col_offset] + f"min({v.value}, {cap})"
                               + line[v.end_col_offset:])
    return "\n".join(lines) if found else cell


def build_script(markdown, cap, smoke=0, framework="kiln"):
    parts = [PRELUDE.format(cap=cap, smoke=smoke, real_mxnet=framework == "mxnet")]
    for n, cell in enumerate(cells_for_mxnet(markdown)):
        cell = cap_epoch_assignments(cell, cap)
        parts.append(f"# ---- cell {n}\n{show_last_expression(cell)}\n")
    return "\n".join(parts)


def selected(name, pattern):
    """`name` is chapter.section; a plain pattern matches the section part only, so that
    'nin' does not pick every section of a chapter whose name contains 'learning'."""
    if "." in pattern or pattern.startswith("chapter_"):
        return pattern in name
    return pattern in name.rsplit(".", 1)[-1]


def first_error(stderr, script_lines):
    """The exception line and the chapter line it came from."""
    lines = stderr.strip().splitlines()
    exc = next((ln for ln in reversed(lines) if re.match(r"^[\w.]+(Error|Exception|Interrupt)"
                                                        r"\b", ln)), lines[-1] if lines else "")
    where = ""
    for ln in lines:
        m = re.search(r'File ".*?scripts/[^"]+\.py", line (\d+)', ln)
        if m:
            n = int(m.group(1))
            if 0 < n <= len(script_lines):
                where = script_lines[n - 1].strip()
    return f"{exc.strip()[:300]}" + (f" (at `{where[:100]}`)" if where else "")


def section_command(script_path, python, framework):
    """How a section runs: on kiln through the alias, or on the real MXNet installed for
    `python` (to measure the budget MXNet needs on the same stand-ins and epoch cap)."""
    if framework == "kiln":
        return [python, "-m", "kiln", "mxnet", script_path]
    if framework == "mxnet":
        return [python, script_path]
    raise ValueError(f"framework must be 'kiln' or 'mxnet', not {framework!r}")


def section_env(scratch, framework):
    """kiln's checkout goes on PYTHONPATH only for kiln: with real MXNet, nothing of kiln's
    may be importable in place of it."""
    env = dict(os.environ, MXNET_HOME=os.path.join(scratch, "mxnet"),
               KILN_DATASET_VERIFY="0", MPLBACKEND="Agg")
    if framework == "kiln":
        env["PYTHONPATH"] = REPO + os.pathsep + os.environ.get("PYTHONPATH", "")
    return env


def run_section(name, script, scratch, timeout, python=sys.executable, framework="kiln"):
    script_path = os.path.join(scratch, "scripts", f"{name}.py")
    with open(script_path, "w") as f:
        f.write(script)
    env = section_env(scratch, framework)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.time()
    proc = subprocess.Popen(section_command(script_path, python, framework),
                            cwd=os.path.join(scratch, "work"), env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        timed_out = True
    wall = time.time() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    with open(os.path.join(scratch, "logs", f"{name}.txt"), "w") as f:
        f.write(out + "\n---- stderr\n" + err)
    if timed_out:
        status, error = "timeout", f"killed after {timeout} s"
    elif proc.returncode == 0:
        status, error = "pass", ""
    elif proc.returncode < 0:   # no traceback: SIGKILL here is most often the OOM killer
        status, error = "fail", f"killed by {signal.Signals(-proc.returncode).name}"
    else:
        status, error = "fail", first_error(err, script.splitlines())
    return status, wall, cpu, error, printed_measures(out)


def printed_measures(stdout):
    """(process CPU s per training step, peak RSS in MB) as the prelude printed them at
    exit; None for what it did not print (no --smoke, or the process was killed)."""
    step = re.search(r"^SMOKE-STEPS \d+ median wall [\d.]+ s, process CPU ([\d.]+)", stdout, re.M)
    rss = re.search(r"^PEAK-RSS-MB (\d+)", stdout, re.M)
    return (float(step.group(1)) if step else None, int(rss.group(1)) if rss else None)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("chapters", help="folder holding the chapters' .md files")
    parser.add_argument("--out", required=True, help="scratch folder (outside the repo)")
    parser.add_argument("--epochs-cap", type=int, default=2)
    parser.add_argument("--only", action="append",
                        help="run only the sections whose file name contains this (or, with "
                             "a '.' or starting 'chapter_', whose chapter.section name does)")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--budget", type=float, default=300, help="seconds a section may take")
    parser.add_argument("--smoke", type=int, default=0, metavar="N",
                        help="debugging: at most N batches per epoch (times then mean nothing)")
    parser.add_argument("--images", default="60000,10000", metavar="TRAIN,TEST",
                        help="images in the MNIST and Fashion-MNIST stand-ins (multiples of "
                             "10; default: the real sizes). Smaller stand-ins run whole "
                             "chapters where the real sizes take hours on two cores")
    parser.add_argument("--framework", choices=("kiln", "mxnet"), default="kiln",
                        help="run on kiln through the alias (default), or on real MXNet")
    parser.add_argument("--python", default=sys.executable,
                        help="the interpreter that runs each section (for --framework "
                             "mxnet, one with mxnet and d2l installed)")
    args = parser.parse_args(argv)
    scratch = os.path.abspath(args.out)
    for sub in ("scripts", "logs", "work"):
        os.makedirs(os.path.join(scratch, sub), exist_ok=True)
    try:
        images = tuple(int(n) for n in args.images.split(","))
        assert len(images) == 2 and all(n > 0 and n % 10 == 0 for n in images)
    except (ValueError, AssertionError):
        parser.error(f"--images takes two multiples of 10, TRAIN,TEST; got {args.images!r}")
    write_stand_in_data(scratch, images)
    sections = []
    for root, _, files in sorted(os.walk(args.chapters)):
        for fname in sorted(files):
            if fname.endswith(".md"):
                chapter = os.path.basename(root)
                name = f"{chapter}.{fname[:-3]}" if chapter else fname[:-3]
                if not args.only or any(selected(name, o) for o in args.only):
                    sections.append((name, os.path.join(root, fname)))
    rows = ["| section | status | wall s | CPU s | step CPU s | peak RSS MB | first error |",
            "| --- | --- | ---: | ---: | ---: | ---: | --- |"]
    for name, path in sections:
        with open(path, encoding="utf-8") as f:
            script = build_script(f.read(), args.epochs_cap, args.smoke, args.framework)
        status, wall, cpu, error, (step, rss) = run_section(
            name, script, scratch, args.timeout, args.python, args.framework)
        if status == "pass" and min(wall, cpu) > args.budget:
            status = "over budget"
        step = "" if step is None else f"{step:.2f}"
        rss = "" if rss is None else str(rss)
        row = (f"| {name} | {status} | {wall:.1f} | {cpu:.1f} | {step} | {rss} | "
               f"{error.replace('|', '/')} |")
        print(row, flush=True)
        rows.append(row)
    table = "\n".join(rows) + "\n"
    results = os.path.join(scratch, "results.md")
    with open(results, "a") as f:
        f.write(f"\n## {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
                f"epochs capped at {args.epochs_cap}, on {args.framework} ({args.python})"
                + (f", SMOKE: {args.smoke} batches per epoch" if args.smoke else "")
                + "\n\n" + table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
