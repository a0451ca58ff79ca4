"""Runtime sizes in generated C: a graph's symbolic dimensions (symdim.py) as integers the
program reads from its table on every call.

A program built from a graph with symbolic sizes gets one table entry more, ('sizes',):
an array of int64, one per symbol in `SizeNames.order`, written before each call from the
call's input shapes (sized_program.py). While its C is generated, `rendering(names)` makes
every symbolic size written into the source an expression over that array
(`KILN_SZ(0) * 256`), so loop bounds, GEMM dimensions and offsets follow the call. Python
code that needs a size's value instead (a comparison, `int()`) still gets the traced
value under a guard: the program is then valid only where the guard holds
(`pinned_by_codegen` says when that gave up a symbol altogether).
"""
from ..._core.symdim import rendering as _rendering, SymInt


def symbols_of(graph):
    """The graph's size symbols, sorted: the order of the program's sizes array."""
    found = set()
    for n in graph.inputs + graph.params + graph.nodes:
        for d in n.shape:
            if isinstance(d, SymInt):
                found |= d.symbols()
    return sorted(found)


class SizeNames:
    """Symbol name -> index in the sizes array, and C text for size expressions."""

    def __init__(self, symbols):
        self.order = list(symbols)
        self.index = {name: k for k, name in enumerate(self.order)}

    def c(self, expr):
        kind = expr[0]
        if kind == "sym":
            return f"KILN_SZ({self.index[expr[1]]})"
        if kind == "const":
            return f"INT64_C({expr[1]})"
        a, b = self.c(expr[1]), self.c(expr[2])
        if kind == "//":      # Python's floor division: C's / truncates toward zero
            return f"kiln_floordiv({a}, {b})"
        if kind == "%":
            return f"kiln_floormod({a}, {b})"
        return f"({a} {kind} {b})"

    def rendering(self):
        return _rendering(self.c)


def prelude(sizes_slot):
    """The macro every generated function reads its sizes through (each has the table P in
    scope), and Python's integer division."""
    return "\n".join([
        f"#define KILN_SZ(k) (((const int64_t *)P[{sizes_slot}])[k])",
        "static inline int64_t kiln_floordiv(int64_t a, int64_t b) {",
        "  int64_t q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;",
        "}",
        "static inline int64_t kiln_floormod(int64_t a, int64_t b) {",
        "  int64_t r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;",
        "}",
        "static inline int64_t kiln_min64(int64_t a, int64_t b) { return a < b ? a : b; }"])


def is_runtime(value):
    """Is this size (or count of elements) only known when the program is called?"""
    return isinstance(value, SymInt)


def maybe_nonempty(size):
    """size > 0, where a runtime size counts as nonempty (its code handles 0 itself)."""
    return is_runtime(size) or size > 0


def monotone(value):
    """Does this size (int or SymInt) only grow as its symbols grow? Sums, products and
    divisions by a positive constant of sizes do; a difference or remainder may not."""
    if not is_runtime(value):
        return True

    def walk(expr):
        kind = expr[0]
        if kind in ("sym", "const"):
            return kind == "sym" or expr[1] >= 0
        if kind in ("-", "%"):
            return False
        if kind == "//":
            return walk(expr[1]) and expr[2][0] == "const" and expr[2][1] > 0
        return walk(expr[1]) and walk(expr[2])
    return walk(value.expr)


def pinned_by_codegen(env, before):
    """The guards recorded since `before` (a count of env.guards) that pin a symbol to one
    value: C generation that needed a concrete size, so the program is not size-generic."""
    return [g for g in env.guards[before:] if g.kind() == "specialized"]
