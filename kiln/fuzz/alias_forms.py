"""Statement forms for variables whose array depends on the path taken through an `if` or
`while` on an array (kiln/_core/alias_paths.py).

On one path the name keeps the array it had (the caller's, another name's, the base of a
view) and on another it gets a new one, or a branch writes into it in place; an in-place
write follows, through that name, through another name for the same array, or through
the array a view of it views. Compiled code must do on every path what eager code does,
and must compile it: the fuzzer reports a fallback of kind 'path-aliasing' (one that
hybridize(strict=True) refuses) as a finding (compare.py).
"""

REBIND = ("{x} = -{x}", "{x} = {x} * 2", "{x} = np.abs({x})", "{x} = {x} - 0.5")
WRITE = ("{x} += 1", "{x} *= -2", "{x}[...] = 0.5", "{x} -= 0.25")


def _subject(s):
    """(set-up lines, the variable the construct rebinds, another name for its memory or
    None): a float variable itself, a second name for it, or a view of it."""
    y = s.pick(lambda sh, d: d.startswith("float") and len(sh) >= 1 and min(sh) > 0)
    if y is None:
        return None
    how = s.choice(("plain", "name", "view"))
    if how == "plain":
        return [], y, None
    v = s.new()
    if how == "name":
        return [f"{v} = {y}"], y, v
    views = [f"{y}[1:]", f"{y}[::2]", f"{y}.T", f"{y}.reshape(-1)"]
    if len(s.shape(y)) >= 2:
        views += [f"{y}[:, 1:]", f"np.swapaxes({y}, 0, 1)"]
    return [f"{v} = {s.choice(views)}"], v, y


def _test(s):
    c = s.pick()
    return s.choice([f"{c}.sum() > 0", f"np.abs({c}).max() < 1.5", f"({c} > 0).any()"])


def _write_after(s, x, other):
    target = s.choice([x, other]) if other is not None else x
    return s.choice(WRITE).format(x=target)


def alias_if(s):
    """An `if` that rebinds the variable on one path (or writes into it on the other, or
    in a nested `if`), then an in-place write."""
    made = _subject(s)
    if made is None:
        return None
    setup, x, other = made
    rebind, write = s.choice(REBIND).format(x=x), s.choice(WRITE).format(x=x)
    shape = s.choice(("if", "rebind-or-write", "write-or-rebind", "nested"))
    if shape == "if":
        lines = [f"if {_test(s)}:", f"    {rebind}"]
    elif shape == "rebind-or-write":
        lines = [f"if {_test(s)}:", f"    {rebind}", "else:", f"    {write}"]
    elif shape == "write-or-rebind":
        lines = [f"if {_test(s)}:", f"    {write}", "else:", f"    {rebind}"]
    else:
        lines = [f"if {_test(s)}:", f"    if {_test(s)}:", f"        {rebind}", f"    {write}"]
    return "\n".join(setup + lines + [_write_after(s, x, other)])


def alias_while(s):
    """A `while` that rebinds the variable on every iteration (so it keeps its array only
    if the loop runs no time), writes into it first, or rebinds it on some iterations
    only, then an in-place write."""
    made = _subject(s)
    if made is None:
        return None
    setup, x, other = made
    n = s.new()
    body = s.choice(([f"{x} = {x} / 2"],
                     [f"{x} -= 0.25", f"{x} = {x} * 0.5"],
                     [f"if {x}.sum() > 0:", f"    {x} = {x} / 2", "else:", f"    {x} -= 0.5"]))
    lines = [f"{n} = np.zeros(())", f"while (np.abs({x}).sum() > 1) * ({n} < 3):"]
    lines += [f"    {line}" for line in body] + [f"    {n} = {n} + 1"]
    return "\n".join(setup + lines + [_write_after(s, x, other)])
