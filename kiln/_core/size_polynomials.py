"""Size expressions (symdim.py's tuples: ("sym", name), ("const", c), (op, a, b)) as
polynomials in the size symbols: what proves a guard at every size (symdim.Guard.
always_holds) and divides a size exactly by a monomial ((batch * 400) // batch is 400)."""


def substitute(expr, replacements):
    kind = expr[0]
    if kind == "sym":
        return replacements.get(expr[1], expr)
    if kind == "const":
        return expr
    return (kind, substitute(expr[1], replacements), substitute(expr[2], replacements))


def polynomial(expr):
    """{monomial (sorted symbol names): coefficient} of an expression made of +, -, *,
    or None."""
    kind = expr[0]
    if kind == "const":
        return {(): expr[1]}
    if kind == "sym":
        return {(expr[1],): 1}
    if kind not in ("+", "-", "*"):
        return None
    a, b = polynomial(expr[1]), polynomial(expr[2])
    if a is None or b is None:
        return None
    out = {}
    if kind == "*":
        for ma, ca in a.items():
            for mb, cb in b.items():
                mono = tuple(sorted(ma + mb))
                out[mono] = out.get(mono, 0) + ca * cb
        return out
    sign = 1 if kind == "+" else -1
    out.update(a)
    for mono, c in b.items():
        out[mono] = out.get(mono, 0) + sign * c
    return out


def exact_quotient(ea, eb):
    """The polynomial ea / eb when eb is one monomial that divides every term of ea (the
    size of a flattened batch over the batch), else None. Floor division and remainder
    are then exact at every size where eb is nonzero (where it is zero, the trace's
    division already failed or a guard excludes it)."""
    pa, pb = polynomial(ea), polynomial(eb)
    if pa is None or pb is None or len(pb) != 1:
        return None
    (mono_b, cb), = pb.items()
    if not mono_b or cb == 0:
        return None
    out = {}
    for mono, c in pa.items():
        rest = list(mono)
        for name in mono_b:
            if name not in rest:
                return None
            rest.remove(name)
        if c % cb:
            return None
        out[tuple(rest)] = c // cb
    return out


def expression_of(poly):
    """The expression of a polynomial {monomial: coefficient}: ("const", c) when it has no
    symbol left."""
    terms = [(mono, c) for mono, c in sorted(poly.items()) if c]
    if all(not mono for mono, _ in terms):
        return ("const", sum(c for _, c in terms))
    expr = None
    for mono, c in terms:
        term = None
        for name in mono:
            term = ("sym", name) if term is None else ("*", term, ("sym", name))
        term = ("const", c) if term is None else term if c == 1 else ("*", term, ("const", c))
        expr = term if expr is None else ("+", expr, term)
    return expr
