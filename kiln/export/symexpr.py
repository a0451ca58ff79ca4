"""Symbolic sizes in exported files: a SymInt's expression as text, and a parser back.

An exported graph with symbolic sizes (kiln/_core/symdim.py) spells each one as a short
expression over named symbols, fully parenthesized, exactly as kiln built it:

    batch        ((batch * seq) * 48)        ((seq + 1) // 2)        (n - -3)

Grammar (read by hand, never by eval; whitespace between tokens is free):

    expr   := term (("+" | "-") term)*
    term   := factor (("*" | "//" | "%") factor)*
    factor := INT | "-" INT | NAME | "(" expr ")"
    NAME   := a letter or "_", then letters, digits or "_" (at most 64 characters)

A binary operation of two operands becomes one node, so writing then reading gives the
very expression tree kiln had, and shape rules re-derive it node for node. A name must be
a symbol the file declares; nesting, length and integer sizes are capped so a hostile file
costs nothing; every problem is a KilnError naming where it is.
"""
from .._core.base import KilnError
from .._core.symdim import SymInt

MAX_TEXT = 2000           # characters in one expression
MAX_DEPTH = 40            # nested parentheses / operators
MAX_NAME = 64
MAX_INT_DIGITS = 18       # fits an int64 with room for the arithmetic
_OPS = ("+", "-", "*", "//", "%")


def valid_name(name):
    """Whether `name` can be a symbol in a file (and an ONNX dim_param)."""
    return (isinstance(name, str) and 0 < len(name) <= MAX_NAME
            and (name[0].isascii() and (name[0].isalpha() or name[0] == "_"))
            and all(c.isascii() and (c.isalnum() or c == "_") for c in name))


def to_text(expr):
    """The text of a SymInt's expression tree (symdim's ("sym", name) / ("const", v) /
    (op, a, b) tuples)."""
    kind = expr[0]
    if kind == "sym":
        if not valid_name(expr[1]):
            raise KilnError(f"export: the size symbol {expr[1]!r} cannot be written: a symbol "
                            "name is a letter or '_' followed by letters, digits or '_' "
                            f"(at most {MAX_NAME} characters); name it so in dynamic_axes")
        return expr[1]
    if kind == "const":
        return str(int(expr[1]))
    if kind not in _OPS:
        raise KilnError(f"export: a symbolic size holds an unknown operation {kind!r}")
    return f"({to_text(expr[1])} {kind} {to_text(expr[2])})"


def size_text(dim):
    """An int stays an int; a SymInt becomes its expression text (a JSON string)."""
    return to_text(dim.expr) if isinstance(dim, SymInt) else int(dim)


class _Parser:
    def __init__(self, text, symbols, where):
        self.text, self.symbols, self.where = text, symbols, where
        self.pos = 0

    def fail(self, why):
        raise KilnError(f"{self.where}: bad size expression {self.text[:80]!r}: {why}")

    def peek(self):
        while self.pos < len(self.text) and self.text[self.pos] == " ":
            self.pos += 1
        if self.pos >= len(self.text):
            return ""
        if self.text.startswith("//", self.pos):
            return "//"
        return self.text[self.pos]

    def take(self, token):
        self.peek()
        self.pos += len(token)

    def expr(self, depth):
        if depth > MAX_DEPTH:
            self.fail(f"nested deeper than {MAX_DEPTH}")
        node = self.term(depth)
        while self.peek() in ("+", "-"):
            op = self.peek()
            self.take(op)
            node = self.binary(op, node, self.term(depth + 1))
        return node

    def term(self, depth):
        node = self.factor(depth)
        while self.peek() in ("*", "//", "%"):
            op = self.peek()
            self.take(op)
            right = self.factor(depth + 1)
            if op != "*" and right == ("const", 0):
                self.fail("division by zero")
            node = self.binary(op, node, right)
        return node

    def binary(self, op, left, right):
        if left[0] == "const" and right[0] == "const":    # kiln writes those as values
            self.fail("arithmetic on constants alone")
        return (op, left, right)

    def factor(self, depth):
        c = self.peek()
        if c == "(":
            self.take("(")
            node = self.expr(depth + 1)
            if self.peek() != ")":
                self.fail(f"expected ')' at position {self.pos}")
            self.take(")")
            return node
        if c == "-" or c.isdigit():
            return ("const", self.integer())
        if c.isascii() and (c.isalpha() or c == "_"):
            start = self.pos
            while self.pos < len(self.text) and self.text[self.pos].isascii() and (
                    self.text[self.pos].isalnum() or self.text[self.pos] == "_"):
                self.pos += 1
            name = self.text[start:self.pos]
            if not valid_name(name):
                self.fail(f"bad symbol name {name[:80]!r}")
            if name not in self.symbols:
                self.fail(f"symbol {name!r} is not declared in the file's 'symbols'")
            return ("sym", name)
        self.fail(f"unexpected {c!r} at position {self.pos}" if c else "unexpected end")

    def integer(self):
        start = self.pos
        if self.text[self.pos] == "-":
            self.pos += 1
        digits = self.pos
        while self.pos < len(self.text) and self.text[self.pos] in "0123456789":
            self.pos += 1
        n = self.pos - digits
        if n == 0 or n > MAX_INT_DIGITS:
            self.fail("an integer needs 1 to 18 digits")
        return int(self.text[start:self.pos])


def parse(text, symbols, where):
    """The expression tree of `text`; `symbols` holds the declared names."""
    if not isinstance(text, str):
        raise KilnError(f"{where}: a symbolic size must be a string, got "
                        f"{type(text).__name__}")
    if not text or len(text) > MAX_TEXT:
        raise KilnError(f"{where}: a size expression must have 1 to {MAX_TEXT} characters")
    parser = _Parser(text, symbols, where)
    tree = parser.expr(0)
    if parser.peek() != "":
        parser.fail(f"unexpected {parser.peek()!r} at position {parser.pos}")
    if tree[0] == "const":
        parser.fail("a constant size is written as a JSON integer")
    return tree


def read_size(value, symbols, where):
    """A shape entry of a file: an int as it is, a string as a SymInt whose hint is its
    value at the declared symbols' hints."""
    if isinstance(value, str):
        tree = parse(value, symbols, where)
        try:
            hint = SymInt(tree, 0).evaluate(symbols)
        except ZeroDivisionError:
            raise KilnError(f"{where}: size {value[:80]!r} divides by zero at the "
                            "symbols' example values") from None
        if abs(hint) >= 1 << 62:
            raise KilnError(f"{where}: size {value[:80]!r} is out of range")
        return SymInt(tree, hint)
    return value


def same_sizes(a, b):
    """Whether two shapes are the same sizes written the same way: ints equal, symbolic
    sizes the same expression (no guard is recorded, unlike SymInt's ==)."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if isinstance(x, SymInt) or isinstance(y, SymInt):
            if not (isinstance(x, SymInt) and isinstance(y, SymInt) and x.expr == y.expr):
                return False
        elif x != y:
            return False
    return True
