"""Bar charts of benchmark ratios, drawn from the tables `python -m kiln bench` printed.

    python tools/bench_charts.py [PAGE.md ...]     # default: every page in docs/performance
    python -m kiln bench > mlp.txt && python tools/bench_charts.py --bench-output mlp.txt \
        --name bench-mlp-today --title "Seed MLP, today"

A table to draw is marked on its page by a comment just above it:

    <!-- chart: NAME; TITLE -->

The table's first column names the runtime; each other column whose cells are times
(`6.2 µs`, `1.73 ms`, `0.9 s`, or bare numbers in the unit the header names) becomes a
group of bars, each runtime's time divided by the reference row's: the row in bold (kiln's
compiled code in these tables), so a bar under 1 is faster than kiln. The chart is
docs/images/NAME.svg (matplotlib, text kept as text); commit it with the page.

With --bench-output, the tables come straight from what a `python -m kiln bench ...`
command printed: one `### TITLE` table per case (`| runtime | time per call | ratio to REF
| ... |`), each case a group of bars, relative to the REF row its table names.
"""
import argparse
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMAGES = os.path.join(ROOT, "docs", "images")
MARKER = re.compile(r"<!--\s*chart:\s*([\w-]+)\s*;\s*(.*?)\s*-->")
UNITS = {"µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def seconds(cell, header_unit):
    """A table cell as seconds, or None when it is no time."""
    text = cell.replace("*", "").replace(",", "").strip()
    m = re.fullmatch(r"([0-9.]+)\s*(µs|us|ms|s)?(\s*\(.*\))?", text)
    if not m:
        return None
    unit = m.group(2) or header_unit
    return float(m.group(1)) * UNITS[unit] if unit else None


def tables(text):
    """[(name, title, header cells, rows of cells)] of the marked tables of a page."""
    lines = text.split("\n")
    found = []
    for k, line in enumerate(lines):
        m = MARKER.search(line)
        if not m:
            continue
        j = k + 1
        while j < len(lines) and not lines[j].startswith("|"):
            j += 1
        block = []
        while j < len(lines) and lines[j].startswith("|"):
            block.append([c.strip() for c in lines[j].strip().strip("|").split("|")])
            j += 1
        if len(block) < 3:
            raise SystemExit(f"chart {m.group(1)}: no table under its marker")
        found.append((m.group(1), m.group(2), block[0], block[2:]))
    return found


def ratios(header, rows):
    """(column names, runtime names, {column: [ratio per runtime]}) against the bold row."""
    reference = [k for k, r in enumerate(rows) if r[0].startswith("**")]
    if len(reference) != 1:
        raise SystemExit("a charted table needs exactly one bold (reference) row")
    columns, values = [], {}
    for c, name in enumerate(header[1:], start=1):
        unit = next((u for u in UNITS if re.search(rf"\b{u}\b", name)), None)
        times = [seconds(r[c], unit) for r in rows]
        ref = times[reference[0]]
        if ref is None or any(t is None for t in times):
            continue
        columns.append(name)
        values[name] = [t / ref for t in times]
    return columns, [r[0].replace("*", "") for r in rows], values


def bench_output_table(text):
    """(header, rows) of a charted table made from `python -m kiln bench` output: one
    column per `### case` table, the reference runtime (its 'ratio to' name) in bold."""
    cases, reference, current = {}, None, None
    for line in text.split("\n"):
        if line.startswith("### "):
            current = line[4:].strip()
        elif current and line.startswith("|") and not line.startswith("| ---"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            m = re.match(r"ratio to (.+)", cells[2]) if len(cells) > 2 else None
            if cells[0] == "runtime" and m:
                reference = m.group(1).strip()
                cases[current] = {}
            elif current in cases:          # a table of runtimes, not another one
                cases[current][cells[0]] = cells[1]
    if not cases or reference is None:
        raise SystemExit("no `### case` tables with a 'ratio to' column in the bench output")
    runtimes = list(dict.fromkeys(r for case in cases.values() for r in case))
    rows = [[f"**{r}**" if r == reference else r] + [cases[c].get(r, "n/a") for c in cases]
            for r in runtimes]
    return ["runtime", *cases], [r for r in rows if all(x != "n/a" for x in r[1:])]


def draw(name, title, header, rows):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "kiln"})
    columns, runtimes, values = ratios(header, rows)
    height = 0.8 / max(len(columns), 1)
    fig, ax = plt.subplots(figsize=(8, 0.9 + 0.45 * len(runtimes) * max(1, len(columns) / 2)))
    for c, column in enumerate(columns):
        ys = [k + c * height for k in range(len(runtimes))]
        bars = ax.barh(ys, values[column], height=height, label=column)
        ax.bar_label(bars, labels=[f"{v:.2f}×" for v in values[column]], fontsize=7, padding=2)
    ax.set_yticks([k + height * (len(columns) - 1) / 2 for k in range(len(runtimes))])
    ax.set_yticklabels(runtimes, fontsize=8)
    ax.invert_yaxis()
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xlabel("time / kiln compiled (C)")
    ax.set_title(title, fontsize=10)
    if len(columns) > 1:
        ax.legend(fontsize=8)
    ax.margins(x=0.12)
    fig.tight_layout()
    path = os.path.join(IMAGES, f"{name}.svg")
    fig.savefig(path, metadata={"Date": None})
    plt.close(fig)
    return path


def main(argv):
    os.makedirs(IMAGES, exist_ok=True)
    if argv[:1] == ["--bench-output"]:
        p = argparse.ArgumentParser(prog="tools/bench_charts.py")
        p.add_argument("--bench-output", required=True)
        p.add_argument("--name", required=True)
        p.add_argument("--title", required=True)
        a = p.parse_args(argv)
        with open(a.bench_output, encoding="utf-8") as f:
            header, rows = bench_output_table(f.read())
        print(f"{os.path.relpath(draw(a.name, a.title, header, rows), ROOT)}: {a.title}")
        return 0
    pages = argv or sorted(glob.glob(os.path.join(ROOT, "docs", "performance", "*.md")))
    for page in pages:
        with open(page, encoding="utf-8") as f:
            for name, title, header, rows in tables(f.read()):
                print(f"{os.path.relpath(draw(name, title, header, rows), ROOT)}: {title}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
