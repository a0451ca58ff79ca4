"""The documentation site (docs/, mkdocs.yml) is tested like code.

- Every code block of every page runs: a page's ```python and ```bash blocks run in order,
  in one namespace and one temporary folder, in a child process. A ```text block right
  after a code block is what that block prints, and must match. A block is left out only
  when the line before it says why: `<!-- docs-test: skip (reason) -->`. Two more markers:
  `<!-- docs-test: file NAME -->` saves the block as NAME instead of running it (a script
  a later ```bash block runs), and `<!-- docs-test: copy SRC DEST ... -->` copies files of
  the repository into the folder first.
- The site builds with `mkdocs build --strict`: a broken link, a missing anchor or
  reference, or a missing page fails; headless Chromium then opens three pages of it and
  searches (tools/check_site.py; skipped where there is no chromium).
- Every public function and class of the documented namespaces has a docstring
  (tools/api_names.py says which names are public).
- Paths the pages name (`kiln/...`, `tests/...`, `tools/...`, `bench/...`) exist.
- The start page links to install, hybridize, ONNX export, MXNet code, distributed
  training and the benchmarks; the README's links into docs/ reach a page and heading.
"""
import glob
import importlib.util
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
MARKER = re.compile(r"<!--\s*docs-test:\s*(skip|file|copy)\b\s*(.*?)\s*-->")
FENCE = re.compile(r"^(\s*)```\s*([\w-]*)")
RUNS = ("python", "bash")


def pages():
    return sorted(os.path.relpath(p, DOCS) for p in glob.glob(os.path.join(DOCS, "**", "*.md"),
                                                                 recursive=True))


def code_blocks(text, where="page"):
    """[dict(lang, line, source, marker, argument, output)] of a page's fenced blocks.

    `output` is the text of a ```text block that follows the block directly."""
    lines = text.split("\n")
    blocks, k = [], 0
    while k < len(lines):
        m = FENCE.match(lines[k])
        if not m:
            k += 1
            continue
        if m.group(1):
            raise AssertionError(f"{where}:{k + 1}: an indented code block; the docs test "
                                 "runs blocks at the left margin only")
        lang, start = m.group(2), k + 1
        end = start
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        if end == len(lines):
            raise AssertionError(f"{where}:{k + 1}: a code block is never closed")
        prev = next((lines[j] for j in range(k - 1, -1, -1) if lines[j].strip()), "")
        marker = MARKER.search(prev)
        block = dict(lang=lang, line=start + 1, source="\n".join(lines[start:end]),
                     marker=marker.group(1) if marker else None,
                     argument=marker.group(2) if marker else "", output=None)
        if lang == "text" and blocks and blocks[-1]["end"] == k - 1 and not marker:
            blocks[-1]["output"] = block["source"]
        else:
            block["end"] = end
            blocks.append(block)
        k = end + 1
    for b in blocks:
        if b["marker"] is None and b["lang"] not in RUNS:
            raise AssertionError(
                f"{where}:{b['line'] - 1}: a ```{b['lang'] or ''} block that nothing runs: "
                "use python or bash, put a ```text block right after the block whose output "
                "it shows, or mark it `<!-- docs-test: skip (reason) -->`")
        if b["marker"] == "skip" and not b["argument"].startswith("("):
            raise AssertionError(f"{where}:{b['line'] - 1}: a skipped block says why: "
                                 "<!-- docs-test: skip (reason) -->")
    return blocks


def runner_source(page, blocks):
    """A script that runs a page's blocks, printing a separator before each block's output."""
    out = ["import os, shutil, subprocess, sys", "ns = {'__name__': '__main__'}"]
    for n, b in enumerate(blocks):
        if b["marker"] == "skip":
            continue
        if b["marker"] == "copy":
            pairs = b["argument"].split()
            for src, dest in zip(pairs[::2], pairs[1::2]):
                out.append(f"shutil.copy({os.path.join(ROOT, src)!r}, {dest!r})")
        out.append(f"print('\\0block {n}', flush=True)")
        if b["marker"] == "file":
            out.append(f"open({b['argument']!r}, 'w').write({b['source'] + chr(10)!r})")
        elif b["lang"] == "python":
            # compiled under the page's own path, with the page's line numbers: tracebacks
            # point into the page, and inspect.getsource (hybridize's control flow) reads it
            padded = "\n" * (b["line"] - 1) + b["source"] + "\n"
            out.append(f"exec(compile({padded!r}, {os.path.join(DOCS, page)!r}, 'exec'), ns)")
        else:
            out.append(f"r = subprocess.run(['bash', '-e', '-c', {b['source']!r}], "
                       "capture_output=True, text=True)")
            out.append("sys.stdout.write(r.stdout); sys.stderr.write(r.stderr); sys.stdout.flush()")
            out.append(f"assert r.returncode == 0, 'docs/{page}:{b['line']}: the bash block "
                       "exited with ' + str(r.returncode)")
    return "\n".join(out) + "\n"


def _normalized(text):
    return "\n".join(line.rstrip() for line in text.strip().split("\n"))


def test_block_parsing_and_markers():
    text = ("x\n```python\na = 1\n```\n```text\n1\n```\n<!-- docs-test: skip (needs a GPU) -->\n"
            "```python\nboom()\n```\n```bash\nls\n```\n")
    blocks = code_blocks(text)
    assert [(b["lang"], b["line"], b["source"], b["output"], b["marker"]) for b in blocks] == [
        ("python", 3, "a = 1", "1", None), ("python", 10, "boom()", None, "skip"),
        ("bash", 13, "ls", None, None)]
    with pytest.raises(AssertionError, match="nothing runs"):
        code_blocks("```c\nint x;\n```\n")
    with pytest.raises(AssertionError, match="says why"):
        code_blocks("<!-- docs-test: skip -->\n```python\nx\n```\n")


def _runnable_pages():
    out = []
    for page in pages():
        with open(os.path.join(DOCS, page), encoding="utf-8") as f:
            blocks = code_blocks(f.read(), page)
        if any(b["marker"] != "skip" for b in blocks):
            out.append(page)
    return out


@pytest.mark.parametrize("page", _runnable_pages())
def test_page_code_blocks_run(page, tmp_path):
    with open(os.path.join(DOCS, page), encoding="utf-8") as f:
        blocks = code_blocks(f.read(), page)
    script = tmp_path / "page_blocks.py"
    script.write_text(runner_source(page, blocks))
    env = dict(os.environ, MPLBACKEND="Agg",
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        pytest.fail(f"a block of docs/{page} failed:\n{proc.stdout[-3000:]}\n"
                    f"{proc.stderr[-5000:]}")
    printed = {}
    for chunk in proc.stdout.split("\0block ")[1:]:
        n, _, text = chunk.partition("\n")
        printed[int(n)] = text
    for n, b in enumerate(blocks):
        if b["output"] is not None and b["marker"] != "skip":
            assert _normalized(printed.get(n, "")) == _normalized(b["output"]), (
                f"docs/{page}:{b['line']}: the block printed\n{printed.get(n, '')}\n"
                f"where the page shows\n{b['output']}")


def _require(module):
    """Import a docs tool, or skip outside CI when the docs extra is not installed."""
    if importlib.util.find_spec(module) is None:
        if os.environ.get("CI"):
            pytest.fail(f"{module} is missing: the README's test command installs the docs "
                        "extra")
        pytest.skip(f"{module} is not installed (pip install -e '.[docs]')")


@pytest.fixture(scope="module")
def built_site(tmp_path_factory):
    """The site built once with `mkdocs build --strict` (warnings are errors), for the tests
    that read it."""
    _require("mkdocs")
    site = tmp_path_factory.mktemp("docs") / "site"
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                           "--site-dir", str(site)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stderr[-6000:]}"
    return site


def test_site_builds_strict(built_site):
    assert (built_site / "search" / "search_index.json").exists()
    with open(built_site / "reference" / "np" / "index.html", encoding="utf-8") as f:
        page = f.read()
    assert "The sum of the elements of" in page       # np.sum's docstring, rendered


def test_every_public_name_is_on_its_reference_page(built_site):
    """Each public function and class has an entry (an anchor named by its path) on the
    built reference page of its namespace."""
    import kiln  # noqa: F401  (the public module paths)
    names = _api_names()
    missing = []
    for page, namespaces in names.PAGES.items():
        with open(built_site / "reference" / page / "index.html", encoding="utf-8") as f:
            anchors = set(re.findall(r'id="([\w.]+)"', f.read()))
        for ns in namespaces:
            module = importlib.import_module(ns)
            for name in names.public_names(ns):
                if not names.needs_docstring(getattr(module, name)):
                    continue        # constants: in the namespace's table
                if not {f"{ns}.{name}", f"{module.__name__}.{name}"} & anchors:
                    missing.append(f"{page}: {ns}.{name}")
    assert not missing, "public names missing from the reference:\n" + "\n".join(missing)


def _api_names():
    spec = importlib.util.spec_from_file_location("kiln_api_names",
                                                  os.path.join(ROOT, "tools", "api_names.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_public_name_has_a_docstring():
    import kiln  # noqa: F401  (the public module paths)
    names = _api_names()
    missing = {ns: names.undocumented(ns) for ns in names.namespaces()}
    missing = {ns: bad for ns, bad in missing.items() if bad}
    assert not missing, "public names without a docstring (say in one line what each does):\n" \
        + "\n".join(f"  {ns}: {' '.join(bad)}" for ns, bad in missing.items())


def test_reference_pages_cover_every_namespace():
    import kiln  # noqa: F401  (the public module paths)
    from kiln.mx.alias import FACES
    names = _api_names()
    documented = {id(importlib.import_module(ns)) for ns in names.namespaces()}
    left_out = [path for path in FACES if id(importlib.import_module(path)) not in documented]
    assert not left_out, f"public module paths with no reference page: {left_out}"
    for page, namespaces in names.PAGES.items():
        with open(os.path.join(DOCS, "reference", f"{page}.md"), encoding="utf-8") as f:
            text = f.read()
        for ns in namespaces:
            assert f"<!-- api: {ns} -->" in text, f"docs/reference/{page}.md lacks {ns}"


PATH = re.compile(r"`((?:kiln|tests|tools|bench)/[\w./-]*\w)`")


def test_paths_named_by_the_docs_exist():
    missing = []
    for page in pages() + ["../README.md"]:
        with open(os.path.join(DOCS, page), encoding="utf-8") as f:
            for path in PATH.findall(f.read()):
                if "<" in path or "*" in path:
                    continue
                if not os.path.exists(os.path.join(ROOT, path)):
                    missing.append(f"{page}: {path}")
    assert not missing, "the docs name paths that do not exist:\n" + "\n".join(missing)


def test_start_page_reaches_the_main_tasks():
    with open(os.path.join(DOCS, "index.md"), encoding="utf-8") as f:
        links = set(re.findall(r"\]\(([^)]+)\)", f.read()))
    for target in ("get-started.md#install", "guides/hybridize.md", "guides/export.md#onnx",
                   "mxnet/index.md", "guides/distributed.md", "performance/index.md"):
        assert target in links, f"docs/index.md does not link to {target}"


README_LINK = re.compile(r"\]\(((?:docs/|ARCHITECTURE)[^)#\s]*)(?:#([^)\s]+))?\)")


def _anchors(path):
    """The heading anchors MkDocs' toc extension makes for a markdown page."""
    with open(path, encoding="utf-8") as f:
        headings = re.findall(r"^#+\s+(.*?)\s*$", f.read(), flags=re.M)
    return {re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", h.lower()).strip())
            for h in headings}


def test_readme_links_reach_the_docs():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        links = README_LINK.findall(f.read())
    assert len(links) > 10, "the README's feature list links into docs/"
    bad = []
    for path, anchor in links:
        full = os.path.join(ROOT, path)
        if not os.path.isfile(full):
            bad.append(f"{path}: no such file")
        elif anchor and anchor not in _anchors(full):
            bad.append(f"{path}#{anchor}: no such heading")
    assert not bad, "README.md links to:\n" + "\n".join(bad)


def test_browser_check_of_the_built_site(built_site, tmp_path):
    """tools/check_site.py: the start page, a guide and an API page in headless Chromium,
    and the search."""
    if shutil.which("chromium") is None:
        pytest.skip("no chromium (apt-get install -y chromium)")
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "check_site.py"),
                           str(built_site), "--screenshots", str(tmp_path / "shots")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"


def _tool(name):
    spec = importlib.util.spec_from_file_location(f"kiln_tool_{name}",
                                                  os.path.join(ROOT, "tools", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_charts_read_what_kiln_bench_prints():
    charts = _tool("bench_charts")
    table = ("| runtime | time per call | ratio to kiln hybridized (c) | note |\n"
             "| --- | ---: | ---: | --- |\n")
    printed = ("kiln benchmark: ...\n\n### batch 1\n\n" + table
               + "| kiln eager | 202.1 µs | 14.14× |  |\n"
               "| kiln hybridized (c) | 14.3 µs | 1.00× |  |\n"
               "| ONNX Runtime | 20.5 µs | 1.44× |  |\n"
               "\n### batch 64\n\n" + table
               + "| kiln eager | 556.3 µs | 1.70× |  |\n"
               "| kiln hybridized (c) | 327.0 µs | 1.00× |  |\n"
               "| ONNX Runtime | 0.26 ms | 0.80× |  |\n"
               "\n### first call\n\n| cache | first call | program |\n| --- | ---: | --- |\n"
               "| cold | 1004 ms | CProgram |\n")
    header, rows = charts.bench_output_table(printed)
    assert header == ["runtime", "batch 1", "batch 64"]
    columns, runtimes, ratios = charts.ratios(header, rows)
    assert runtimes == ["kiln eager", "kiln hybridized (c)", "ONNX Runtime"]
    assert [round(r, 2) for r in ratios["batch 64"]] == [1.70, 1.0, 0.80]
    assert round(ratios["batch 1"][0], 2) == 14.13
