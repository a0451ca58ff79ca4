"""Code cells of the seed documents (../shared/seeds), found by their first line.

The seeds are prose with code in between, not notebooks. A cell starts at a given line
and runs until prose: a line whose first CJK character is not in a comment or a string,
or a '•' line-number marker. Output blocks the seeds quote as '''...''' strings are kept
(they are expression statements). `mxnet` becomes `kiln`.
"""
import os
import re
import textwrap

SEEDS = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "seeds")
_CJK = re.compile(r"[\u3000-\u9fff\uff00-\uffef]")


def seed_text(prefix):
    """The text of the seed whose file name starts with `prefix`, or None."""
    if not os.path.isdir(SEEDS):
        return None
    for name in sorted(os.listdir(SEEDS)):
        if name.startswith(prefix):
            with open(os.path.join(SEEDS, name), encoding="utf-8") as f:
                return f.read()
    return None


def _is_prose(line, in_string):
    if in_string:
        return False
    if line.strip().startswith("•"):
        return True
    m = _CJK.search(line)
    if m is None:
        return False
    before = line[:m.start()]
    return not any(c in before for c in "#'\"")


def cell(text, first_line, after=None, max_lines=None, last_line=None, keep_mxnet=False):
    """The cell starting at the line `first_line` (stripped), searched after the line
    `after` when given, ending before prose or at `last_line` (for seeds that quote
    outputs as bare text); mxnet replaced by kiln unless `keep_mxnet` (to run the cell
    through `python -m kiln mxnet`)."""
    lines = text.split("\n")
    start = 0
    if after is not None:
        start = next(k for k, line in enumerate(lines) if line.strip() == after) + 1
    begin = next(k for k in range(start, len(lines)) if lines[k].strip() == first_line)
    out, in_string = [], False
    for line in lines[begin:]:
        if _is_prose(line, in_string) or (max_lines and len(out) >= max_lines):
            break
        out.append(line)
        if last_line is not None and line.strip() == last_line:
            break
        if line.count("'''") % 2:
            in_string = not in_string
    code = textwrap.dedent("\n".join(out))
    return code if keep_mxnet else re.sub(r"\bmxnet\b", "kiln", code)
