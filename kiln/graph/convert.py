"""Control-flow conversion: rewrite the AST of the user's traced forward so that `if`,
`while` and `for i in range(...)` whose test is an array become graph ops.

Each construct becomes a call into kiln/graph/convert_runtime.py that decides at run time:

    if c: A else: B          def _kiln_then_1(x, y): A; return (x, y)
                      -->    def _kiln_else_1(x, y): B; return (x, y)
                             (x, y) = _kiln_rt.if_(c, _kiln_then_1, _kiln_else_1,
                                                   _kiln_rt.get(locals(), ('x', 'y')), ...)

The branch/body functions take and return the variables the construct assigns, so
in-place updates (`X /= 2`, which rebinds a symbolic array) flow out functionally; every
other name is read through the closure. `while` becomes cond/body functions, `for i in
range(n)` a body function of (i, ...). `not`/`and`/`or` in tests and `a if c else b` are
rewritten too. A construct that cannot be converted (a `break`, a `return` in one branch
only) is left as Python and noted, so a failure there can be explained.

Only functions that hybridize traces are converted (a block's forward / hybrid_forward,
the function given to kiln.hybridize), once per code object. The new function is built
from the user's own source with the original globals and closure cells, and keeps the
user's file name and line numbers, so errors and warnings point at the user's code.
`self.<attr>` reads are routed through `_kiln_rt.read_attr`, which lets kiln notice a
number or array attribute that a graph baked in as a constant (kiln/graph/guards.py).
"""
import ast
import inspect
import os
import textwrap
import types

from . import convert_runtime

_KILN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PREFIX = "_kiln_"

_converted = {}      # original code -> ConvertedCode, or None (not converted: see FAILED)
FAILED = {}          # original code -> (kind, reason)
NOTES = {}           # any code object of converted code -> {line: why it stayed Python}


class ConvertedCode:
    __slots__ = ("code", "original")

    def __init__(self, code, original):
        self.code, self.original = code, original


def convert(fn):
    """The converted version of a Python function or bound method (or fn unchanged)."""
    if isinstance(fn, types.MethodType):
        new = convert(fn.__func__)
        return fn if new is fn.__func__ else types.MethodType(new, fn.__self__)
    if not isinstance(fn, types.FunctionType):
        return fn
    from .guards import note_function
    note_function(fn)     # its globals/closure values may become graph constants (lambdas too)
    if not _worth_converting(fn):
        return fn
    code = fn.__code__
    if code not in _converted:
        _converted[code] = _convert_code(fn)
    hit = _converted[code]
    if hit is None:
        return fn
    cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
    closure = tuple(cells[n] if n in cells else types.CellType(convert_runtime)
                    for n in hit.code.co_freevars)
    new = types.FunctionType(hit.code, fn.__globals__, fn.__name__, fn.__defaults__, closure)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__qualname__ = fn.__qualname__
    new.__dict__.update(fn.__dict__)
    new.__wrapped__ = fn
    return new


def _worth_converting(fn):
    code = fn.__code__
    if code.co_name == "<lambda>" or code.co_flags & (inspect.CO_GENERATOR |
                                                      inspect.CO_COROUTINE):
        return False
    path = os.path.abspath(code.co_filename)
    return not path.startswith(_KILN_DIR + os.sep)   # kiln's own layers need no rewriting


def failure_of(code):
    return FAILED.get(code)


def _convert_code(fn):
    code = fn.__code__
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        FAILED[code] = ("no-source", f"the source of {fn.__qualname__} is not available "
                        "(defined with exec or in an interactive session?), so its control "
                        "flow cannot be converted")
        return None
    try:
        tree = ast.parse(textwrap.dedent("".join(lines)))
        fdef = tree.body[0]
        if not isinstance(fdef, ast.FunctionDef) or fdef.name != fn.__name__:
            raise SyntaxError("source does not start with the function's def")
    except SyntaxError as exc:
        FAILED[code] = ("no-source", f"the source of {fn.__qualname__} could not be parsed "
                        f"({exc})")
        return None
    try:
        return _rewrite(fn, tree, fdef, first)
    except Exception as exc:   # a construct the rewrite mishandles: keep the original
        FAILED[code] = ("unsupported", f"kiln could not convert the control flow of "
                        f"{fn.__qualname__} ({type(exc).__name__}: {exc})")
        return None


def _rewrite(fn, tree, fdef, first):
    code = fn.__code__
    ast.increment_lineno(tree, first - 1)
    fdef.decorator_list = []
    notes = {}
    args = fdef.args.posonlyargs + fdef.args.args
    self_name = args[0].arg if args and "." in fn.__qualname__ else None
    fdef.body = _hoist_early_returns(fdef.body, at_end=True)
    _Converter(self_name, notes).visit(fdef)
    factory = ast.FunctionDef(
        name=_PREFIX + "factory",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=n) for n in
                                                 code.co_freevars + (_PREFIX + "rt",)],
                           kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=[fdef, ast.Return(value=ast.Name(id=fdef.name, ctx=ast.Load()))],
        decorator_list=[], returns=None, type_params=[])
    ast.copy_location(factory, fdef)
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    compiled = compile(module, code.co_filename, "exec")
    inner = _find_code(_find_code(compiled, factory.name), fdef.name)
    for c in _all_code(inner):
        NOTES[c] = notes
    return ConvertedCode(inner, code)


def _find_code(code, name):
    for c in code.co_consts:
        if isinstance(c, types.CodeType) and c.co_name == name:
            return c
    raise RuntimeError(f"converted code has no {name}")


def _all_code(code):
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from _all_code(c)


# ---- analysis ------------------------------------------------------------------------------
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp,
           ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _walk_scope(nodes):
    """Every node in these statements, not descending into nested scopes."""
    stack = list(nodes)
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, _SCOPES):
            continue
        stack.extend(ast.iter_child_nodes(n))


def _assigned(stmts):
    names = set()
    for n in _walk_scope(stmts):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            names.add(n.id)
        elif isinstance(n, (ast.Subscript, ast.Attribute)) and isinstance(n.ctx, ast.Store):
            # y[0] = v (or y.attr = v) rebinds y's value: y is a branch/loop variable too
            base = n.value
            while isinstance(base, (ast.Subscript, ast.Attribute)):
                base = base.value
            if isinstance(base, ast.Name):
                names.add(base.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(n.name)
        elif isinstance(n, ast.alias):
            names.add((n.asname or n.name).split(".")[0])
    return {n for n in names if not n.startswith(_PREFIX)}


def _count(stmts, kinds, loops_stop=False):
    """How many `kinds` nodes the statements hold (a nested loop owns its break/continue)."""
    total = 0
    stack = list(stmts)
    while stack:
        n = stack.pop()
        if isinstance(n, kinds):
            total += 1
        if isinstance(n, _SCOPES) or (loops_stop and isinstance(n, (ast.For, ast.While))):
            continue
        stack.extend(ast.iter_child_nodes(n))
    return total


def _jumps(stmts):
    return _count(stmts, (ast.Break, ast.Continue), loops_stop=True)


def _returns(stmts):
    return _count(stmts, (ast.Return,))


def _ends_with_return(stmts):
    return bool(stmts) and isinstance(stmts[-1], ast.Return)


def _hoist_early_returns(stmts, at_end):
    """`if c: ...; return a` followed by more code -> the code after the `if` moves into
    the path that falls through (`else: ...; <more code>`), so both paths end in return."""
    for i, s in enumerate(stmts):
        if not isinstance(s, ast.If) or i + 1 == len(stmts):
            continue
        body_returns, else_returns = _ends_with_return(s.body), _ends_with_return(s.orelse)
        if body_returns == else_returns:
            continue
        rest = stmts[i + 1:]
        if at_end and not _ends_with_return(rest):
            rest = rest + [ast.copy_location(ast.Return(value=None), rest[-1])]
        if body_returns:
            s.orelse = _hoist_early_returns(s.orelse + rest, at_end)
        else:
            s.body = _hoist_early_returns(s.body + rest, at_end)
        return stmts[:i + 1]
    return stmts


# ---- the rewrite ---------------------------------------------------------------------------
def _rt(attr):
    return ast.Attribute(value=ast.Name(id=_PREFIX + "rt", ctx=ast.Load()), attr=attr,
                         ctx=ast.Load())


def _call(attr, *args):
    return ast.Call(func=_rt(attr), args=list(args), keywords=[])


def _names_tuple(names, ctx):
    return ast.Tuple(elts=[ast.Name(id=n, ctx=ctx()) for n in names], ctx=ctx())


def _strs(names):
    return ast.Tuple(elts=[ast.Constant(value=n) for n in names], ctx=ast.Load())


def _current(names):
    locals_call = ast.Call(func=ast.Name(id="locals", ctx=ast.Load()), args=[], keywords=[])
    return _call("get", locals_call, _strs(names))


def _fn(name, params, body):
    return ast.FunctionDef(
        name=name, args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in params],
                                      kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=body, decorator_list=[], returns=None, type_params=[])


def _thunk(expr):
    return ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[],
                                         kw_defaults=[], defaults=[]), body=expr)


class _Converter(ast.NodeTransformer):
    def __init__(self, self_name, notes):
        self.self_name = self_name
        self.notes = notes
        self.count = 0

    def _next(self):
        self.count += 1
        return self.count

    def _place(self, stmts, where):
        """Generated nodes get the construct's first line only: a call spanning the whole
        statement would be reported (by CPython 3.11) at the statement's last line."""
        def locate(n):
            n.lineno = n.end_lineno = where.lineno
            n.col_offset = where.col_offset
            n.end_col_offset = where.col_offset + 1
        for s in stmts:
            locate(s)
            for n in ast.walk(s):
                if not hasattr(n, "lineno") and "lineno" in n._attributes:
                    locate(n)
        return stmts

    # tests: not / and / or keep Python's short-circuit for Python values
    def _test(self, expr):
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
            return ast.copy_location(_call("not_", self._test(expr.operand)), expr)
        if isinstance(expr, ast.BoolOp):
            kind = "and_" if isinstance(expr.op, ast.And) else "or_"
            return ast.copy_location(_call(kind, *[_thunk(self._test(v)) for v in expr.values]),
                                     expr)
        return expr

    def visit_ClassDef(self, node):
        return node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if (self.self_name and isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Name)
                and node.value.id == self.self_name):
            return ast.copy_location(_call("read_attr", node.value, ast.Constant(node.attr)),
                                     node)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        # zero-argument super() needs the method's own frame; inside a generated branch
        # function it would fail, so spell it out (the __class__ cell is kept)
        if (self.self_name and isinstance(node.func, ast.Name) and node.func.id == "super"
                and not node.args and not node.keywords):
            node.args = [ast.copy_location(ast.Name(id="__class__", ctx=ast.Load()), node),
                         ast.copy_location(ast.Name(id=self.self_name, ctx=ast.Load()), node)]
        return node

    def visit_IfExp(self, node):
        self.generic_visit(node)
        return ast.copy_location(_call("ifexp", self._test(node.test), _thunk(node.body),
                                       _thunk(node.orelse)), node)

    def visit_If(self, node):
        self.generic_visit(node)
        if _jumps(node.body) or _jumps(node.orelse):
            self.notes[node.lineno] = "this `if` contains break/continue, which kiln cannot convert"
            return node
        k = self._next()
        test = self._test(node.test)
        rb, ro = _returns(node.body), _returns(node.orelse)
        if rb or ro:
            if not (rb == ro == 1 and _ends_with_return(node.body)
                    and _ends_with_return(node.orelse)):
                self.notes[node.lineno] = ("this `if` returns from only some of its paths; "
                                           "kiln converts an `if` whose branches both end "
                                           "in `return` (or neither returns)")
                return node
            names = sorted(_assigned(node.body) | _assigned(node.orelse))
            then_fn = _fn(f"{_PREFIX}then_{k}", names, node.body)
            else_fn = _fn(f"{_PREFIX}else_{k}", names, node.orelse)
            call = _call("if_", test, ast.Name(id=then_fn.name, ctx=ast.Load()),
                         ast.Name(id=else_fn.name, ctx=ast.Load()), _current(names),
                         _strs(names), ast.Constant(True))
            return self._place([then_fn, else_fn, ast.Return(value=call)], node)
        names = sorted(_assigned(node.body) | _assigned(node.orelse))
        ret = ast.Return(value=_names_tuple(names, ast.Load))
        then_fn = _fn(f"{_PREFIX}then_{k}", names, node.body + [ret])
        else_fn = _fn(f"{_PREFIX}else_{k}", names, (node.orelse or [ast.Pass()]) + [ret])
        call = _call("if_", test, ast.Name(id=then_fn.name, ctx=ast.Load()),
                     ast.Name(id=else_fn.name, ctx=ast.Load()), _current(names), _strs(names))
        return self._place([then_fn, else_fn, self._assign(names, call)], node)

    def _assign(self, names, call):
        if not names:
            return ast.Expr(value=call)
        return ast.Assign(targets=[_names_tuple(names, ast.Store)], value=call)

    def _loop_ok(self, node, what):
        if node.orelse or _jumps(node.body) or _returns(node.body):
            self.notes[node.lineno] = (f"this `{what}` loop has an else clause, break, "
                                       "continue or return, which kiln cannot convert")
            return False
        return True

    def visit_While(self, node):
        self.generic_visit(node)
        if not self._loop_ok(node, "while"):
            return node
        k = self._next()
        names = sorted(_assigned(node.body))
        cond_fn = _fn(f"{_PREFIX}cond_{k}", names, [ast.Return(value=self._test(node.test))])
        body_fn = _fn(f"{_PREFIX}body_{k}", names,
                      node.body + [ast.Return(value=_names_tuple(names, ast.Load))])
        call = _call("while_", ast.Name(id=cond_fn.name, ctx=ast.Load()),
                     ast.Name(id=body_fn.name, ctx=ast.Load()), _current(names), _strs(names))
        return self._place([cond_fn, body_fn, self._assign(names, call)], node)

    def visit_For(self, node):
        self.generic_visit(node)
        it = node.iter
        if not (isinstance(node.target, ast.Name) and isinstance(it, ast.Call)
                and isinstance(it.func, ast.Name) and it.func.id == "range"
                and 1 <= len(it.args) <= 3 and not it.keywords
                and not any(isinstance(a, ast.Starred) for a in it.args)):
            return node
        if not self._loop_ok(node, "for"):
            return node
        k = self._next()
        target = node.target.id
        names = [target] + sorted(_assigned(node.body) - {target})
        body_fn = _fn(f"{_PREFIX}for_{k}", names,
                      node.body + [ast.Return(value=_names_tuple(names, ast.Load))])
        bounds = ast.Tuple(elts=list(it.args), ctx=ast.Load())
        call = _call("for_range", bounds, ast.Name(id=body_fn.name, ctx=ast.Load()),
                     _current(names), _strs(names))
        return self._place([body_fn, self._assign(names, call)], node)

    def visit_Try(self, node):
        self.generic_visit(node)
        if not node.handlers:
            return node
        for h in node.handlers:
            if h.type is None:
                h.type = ast.Name(id="BaseException", ctx=ast.Load())
            if h.name is None:
                h.name = _PREFIX + "exc"
            h.body.insert(0, ast.Expr(value=_call("caught", ast.Constant(node.lineno),
                                                  ast.Name(id=h.name, ctx=ast.Load()))))
        guard = ast.With(items=[ast.withitem(context_expr=_call("guard_try",
                                                                ast.Constant(node.lineno)))],
                         body=[node])
        return self._place([guard], node)
