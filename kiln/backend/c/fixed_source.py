"""The C backend's fixed C: the files under csrc/, as the compiler gets them.

What does not vary from graph to graph (the runtime library, the CPython extension, the
array cache, the functions every generated program starts with) is written as C files in
csrc/, and the modules that build it read them here, once per process. Values a file
takes from Python (thresholds, the BLAS integer type) come in as `#define`s put before it.

The text is handed to build.load whole, so the cache key, a hash of the source, changes
with any code change in a file. Two rewrites make it one translation unit on stdin:

- `#include "name"` of another file in the same directory is replaced by that file, as the
  preprocessor would include it (a file included twice is an error: none has a guard).
  Angle-bracket includes are left to the compiler.
- The comment at the top of each file, which tells its readers what the file is and who
  includes it, is dropped: the size of a generated program picks its optimization level
  (build.BIG_SOURCE), and those comments should not move a program across that line.
  Comments never enter the cache key (build._without_comments).
"""
import functools
import re
from pathlib import Path

CSRC = Path(__file__).parent / "csrc"

_QUOTED_INCLUDE = re.compile(r'^#include "([^"]+)"[ \t]*$', re.M)
_HEADER_COMMENT = re.compile(r"\A\s*/\*.*?\*/[ \t]*\n", re.S)


@functools.lru_cache(maxsize=None)
def text(name):
    """csrc/<name> with the files it includes by quoted name expanded in place."""
    return _expand(CSRC, name, set())


def _expand(directory, name, seen):
    if name in seen:
        raise ValueError(f"{directory / name} is included twice")
    seen.add(name)
    path = directory / name
    body = _HEADER_COMMENT.sub("", path.read_text(encoding="utf-8"), count=1)

    def include(match):
        included = match.group(1)
        if not (directory / included).is_file():
            raise FileNotFoundError(f"{path} includes {included!r}, which is not in "
                                    f"{directory}")
        return _expand(directory, included, seen).rstrip("\n")
    return _QUOTED_INCLUDE.sub(include, body)


def defines(values):
    """`#define NAME value` lines, one per item, for a file that takes values from Python."""
    return "".join(f"#define {name} {value}\n" for name, value in values.items())
