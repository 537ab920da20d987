"""One-change edits of Python source: the mutation tool's wrong answers, and the checker's way to find a slip.

`edits(source, within)` lists every file that differs from `source` by one change inside the functions `within`
accepts: an operator swapped (+ -, * /, ** *, @ *, & |, and or), a minus sign dropped or added, `=` for `+=` or
back, an update in place made a new array (x *= v -> x = x * v), a constant changed (+1, -1, x2, /2, its sign), a
comparison's tie flipped (> >=), a reduction dropped, added or swapped (sum mean, max min), keepdims or the axis
dropped, added (to any NumPy call that takes one: np.repeat) or changed, a transpose removed, added or of the last
two axes only, a chained comparison split, a math function dropped or added (sqrt exp log abs), a product for
another (np.dot np.outer np.matmul ...), a power dropped (r**3 -> r), the max subtracted inside exp, a value saved
on self put where a method works one out again (r = ... -> r = self.r), a saved value or a variable swapped for
another (self.a -> self.b, g -> gy), the returned values in another order, a condition negated, `if` for `while` or
back, a statement dropped.

Almost every edit is undone by another edit. The exceptions: a dropped statement or power, a saved value put in, a
dropped term that is not a name the file reads, an axis changed to one the file no longer holds (unless a value
holds it that nothing reads any more: `unread`, tried as axes and terms), an update in place made a new array, a
chained comparison split, .T made a swap of the last two axes, and a minus sign dropped from a call's argument
(tests/test_exercise_search.py checks the rest). `ingredients` closes much of the dropped term and the changed axis:
expressions from elsewhere (the checker takes those of the engine's own code that read only names the student's file
binds, `(1 - b1)`, `tuple(range(leading)) + stretched`) put in as a factor, a term or an axis. So teachers/mutate.py
makes wrong answers from a solution with it, and the checker (search.py) finds, for a wrong file, the one edit that
makes it pass: its line and the change name the slip in the student's own code, whether anyone wrote that slip down
or not.
"""

import ast
import functools
import inspect

import numpy as np

SWAPS = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.Pow: ast.Mult}
SWAPS |= {ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd}  # masks: x >= low & x <= high
TIES = {ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq}
TIES |= {ast.In: ast.NotIn, ast.NotIn: ast.In}
REDUCTIONS = {"sum": "mean", "mean": "sum", "max": "min", "min": "max"}
DROPPABLE = {"sqrt", "exp", "log", "abs", "copy"}
WRAPPERS = ("sqrt", "exp", "log")  # added around a value: the undoing of a dropped one
PRODUCTS = ("dot", "outer", "matmul", "multiply", "inner")  # np.dot(y, y) where np.outer(y, y) belongs: one for another
SYMBOLS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**", ast.MatMult: "@", ast.Gt: ">"}
SYMBOLS |= {ast.BitAnd: "&", ast.BitOr: "|", ast.And: "and", ast.Or: "or"}
BUILTINS = {"np", "tuple", "range", "len", "sum", "abs", "min", "max"}  # what an ingredient may read beside the file
LONGEST = 40  # characters of an ingredient: a term or an axis, not a whole formula
SYMBOLS |= {ast.GtE: ">=", ast.Lt: "<", ast.LtE: "<=", ast.Eq: "==", ast.NotEq: "!=", ast.In: "in", ast.NotIn: "not in"}


def edits(source, within=lambda function: True, ingredients=()):
    """[(line, what changed, new source)]: one change each, inside the functions `within(function node)` accepts,
    none the same as `source`; `ingredients` (unparsed expressions) join the terms and axes. Two edits can make one
    file (`.copy()` dropped, a saved value put in): a caller keeps the edits it wants, then the first of each file
    (`distinct`)."""
    tree = ast.parse(source)
    axes, reductions, terms = _additions(tree, [i for i in ingredients if i.startswith("tuple(")])  # axes too
    added, lines = (axes, reductions, terms, ingredients), source.splitlines(keepends=True)
    found = []
    parents = {id(child): parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    for node, values, operand, statement in list(_sites(tree, within)):
        original = ast.unparse(statement)
        for what, new in _alternatives(node, values, operand, added):
            ast.fix_missing_locations(ast.copy_location(new, node))
            _replace(parents[id(node)], node, new)  # in place, and back after: one tree for every edit
            code = ast.unparse(new if node is statement else statement)  # the statement, spelled anew
            _replace(parents[id(node)], new, node)
            if code == original:  # an edit that changes nothing (0 -> 0 * 2)
                continue
            indent = " " * statement.col_offset
            written = "".join(f"{indent}{line}\n" for line in code.splitlines())
            text = "".join(lines[: statement.lineno - 1]) + written + "".join(lines[statement.end_lineno :])
            if text != source:
                found.append((node.lineno, what, text))
    return found


def distinct(found):
    """The edits of `found` less those that make a file an earlier one made: each file under its first description."""
    first = {}
    for edit in found:
        first.setdefault(edit[2], edit)
    return list(first.values())


def _sites(tree, within):
    """(node, (the class's saved attribute names, the function's variables), whether it is an operand, the function's
    statement holding it) for every node inside the accepted functions; an operand (of an operator, or a value
    assigned or returned) is where a term can be changed whole. The statement is written anew around an edit; the
    rest of the file stays as it is."""
    for top in tree.body:
        methods = [n for n in top.body if isinstance(n, ast.FunctionDef)] if isinstance(top, ast.ClassDef) else [top]
        saved = sorted(
            {n.attr for n in ast.walk(top) if on_self(n) and isinstance(n.ctx, ast.Store)}
            if isinstance(top, ast.ClassDef)
            else set()
        )
        for function in methods:
            if isinstance(function, ast.FunctionDef) and within(function):
                names = sorted(_numbers(function))
                body = function.body[1:] if ast.get_docstring(function) else function.body
                for statement in body:
                    operands = {id(o) for node in ast.walk(statement) for o in _operands(node)}
                    for node in ast.walk(statement):
                        yield node, (saved, names), id(node) in operands, statement


def _numbers(function):
    """The function's arguments and the variables it assigns arithmetic to (g = gy * w): where a student reads one
    value for another. No swap of a name changes this set, so every swap is undone by another."""
    assigned = [n for n in ast.walk(function) if isinstance(n, (ast.Assign, ast.AugAssign))]
    computed = [n for n in assigned if any(isinstance(v, ast.BinOp) for v in ast.walk(n.value))]
    stores = {t.id for n in computed for t in ast.walk(n) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)}
    return stores | {a.arg for a in function.args.args} - {"self"}


def _operands(node):
    if isinstance(node, ast.BinOp):
        return [node.left, node.right]
    if isinstance(node, ast.Call) and not isinstance(node.func, ast.Attribute):  # f(gy, ...): a value passed
        return node.args
    if isinstance(node, ast.Call) and ast.unparse(node.func.value) not in ("np", "math", "self"):
        return [node.func.value]  # g in g.mean(...): a value reduced, reshaped
    if isinstance(node, (ast.GeneratorExp, ast.ListComp)):  # (leading + i for ...): a value made
        return [node.elt]
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.BinOp):  # shape[leading + i]: an index
        return [node.slice]
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.Return)) and node.value is not None:
        return node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
    return []


def _additions(tree, more_axes):
    """(axes, reductions, terms): the axis arguments the file uses, with 0, -1 and `more_axes` (what an axis edit
    tries), the reductions an operand can get (`.sum(...)` over each axis, with keepdims=True and without, and
    each reduction call the file itself makes), and the names and attributes it reads or saves on self (a term
    left out is one of them): unparsed."""
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)]
    lost = unread(tree)
    axes = {ast.unparse(k.value) for n in calls for k in n.keywords if k.arg == "axis"} | {"0", "-1", *more_axes}
    axes = sorted(axes | {name for name in lost if name.isidentifier()})
    reductions = [f".sum(axis={axis}{keep})" for axis in axes for keep in (", keepdims=True", "")] + [".sum()"]
    looped = {
        t.id for n in ast.walk(tree) if isinstance(n, ast.For) for t in ast.walk(n.target) if isinstance(t, ast.Name)
    }
    axes += sorted(looped - set(axes))  # for ax in self.axes: an axis a call inside the loop may leave out
    own = [n for n in calls if n.func.attr in REDUCTIONS and not (isinstance(n.func.value, ast.Name) and n.args)]
    reductions += ["." + ast.unparse(ast.Call(ast.Name(n.func.attr), n.args, n.keywords)) for n in own]
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    values = [  # what the file reads, and what it saves on self (a backward can read it)
        n
        for n in ast.walk(tree)
        if isinstance(n, (ast.Name, ast.Attribute)) and (isinstance(n.ctx, ast.Load) or on_self(n))
    ]
    values = [n for n in values if id(n) not in called]
    terms = {ast.unparse(n) for n in values if not (isinstance(n, ast.Name) and n.id in ("np", "self", "math"))}
    terms = {t for t in terms if not t.startswith(("np.", "math.")) and not t.endswith(("shape", "axis", "axes"))}
    return axes, list(dict.fromkeys(reductions)), sorted(terms | set(lost))


def unread(tree):
    """['self.b', 'gy', ...]: the values the file's functions make or are given and nothing reads (saved on self,
    assigned to a name, an argument; reading only its shape, ndim or dtype does not count): where one belonged, a term
    or an axis was lost."""
    parents = {id(child): parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    inside = [n for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) for n in ast.walk(f)]
    values = [n for n in ast.walk(tree) if isinstance(n, ast.Name) or on_self(n)]
    made = {ast.unparse(n) for n in inside if (isinstance(n, ast.Name) or on_self(n)) and isinstance(n.ctx, ast.Store)}
    made |= {n.arg for n in inside if isinstance(n, ast.arg) and n.arg != "self"}
    read = {
        ast.unparse(n)
        for n in values
        if isinstance(n.ctx, ast.Load) and getattr(parents[id(n)], "attr", None) not in ("shape", "ndim", "dtype")
    }
    return sorted(made - read - {"_"})


def on_self(node):
    """Whether node is `self.something`."""
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def _is_value(node):
    """A name, attribute, call or subscript being read: where a sign, a transpose or a function can be added."""
    return isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)) and isinstance(
        getattr(node, "ctx", ast.Load()), ast.Load
    )


def _alternatives(node, values, operand, added):
    """[(what, replacement node)] for one node; `values`: the class's saved attributes, the function's variables."""
    axes, reductions, terms, ingredients = added
    saved, names = values
    out = []
    if operand and not isinstance(node, ast.Constant):
        text = ast.unparse(node)
        out.append((f"a minus sign added to {text}", _minus(node)))
        for term in ingredients if _is_value(node) else ():  # a factor or a summand lost whole
            for op in (ast.Mult, ast.Add, ast.Sub):
                grown = ast.BinOp(node, op(), ast.parse(term, mode="eval").body)
                out.append((f"a term put back: {text} -> {ast.unparse(grown)}", grown))
        for term in terms if _is_value(node) else ():
            if term != text:
                for op in (ast.Mult, ast.Add, ast.Sub, ast.Div):
                    grown = ast.BinOp(node, op(), ast.parse(term, mode="eval").body)
                    out.append((f"a term added: {text} -> {ast.unparse(grown)}", grown))
        for reduction in reductions:
            summed = ast.parse(f"(_){reduction}", mode="eval").body
            summed.func.value = node
            out.append((f"{reduction} added to {text}", summed))
        if _is_value(node):
            out += [(f"np.{name} added around {text}", _numpy(name, node)) for name in WRAPPERS]
            out.append((f".copy() added to {text}", _method(node, "copy")))
    if isinstance(node, ast.BinOp):
        op = type(node.op)
        if op in SWAPS:
            out.append((f"{SYMBOLS[op]} -> {SYMBOLS[SWAPS[op]]}", ast.BinOp(node.left, SWAPS[op](), node.right)))
        if op is ast.Mult:
            out.append(("* -> **", ast.BinOp(node.left, ast.Pow(), node.right)))
            out.append(("* -> @", ast.BinOp(node.left, ast.MatMult(), node.right)))
        if op is ast.MatMult:
            out.append(("@ -> *", ast.BinOp(node.left, ast.Mult(), node.right)))
            for side in ("left", "right"):
                flipped = ast.BinOp(node.left, ast.MatMult(), node.right)
                setattr(flipped, side, _method(getattr(node, side), "swapaxes", -1, -2))
                out.append((f"a transpose added to the {side} factor of @", flipped))
                flipped = ast.BinOp(node.left, ast.MatMult(), node.right)
                setattr(flipped, side, ast.Attribute(getattr(node, side), "T", ast.Load()))
                out.append((f"a transpose added to the {side} factor of @ (.T)", flipped))
        if op in (ast.Add, ast.Sub, ast.Mult, ast.Div):
            out += [(f"a term dropped: {ast.unparse(node)} -> {ast.unparse(t)}", t) for t in (node.left, node.right)]
        if op is ast.Pow:
            out.append((f"a power dropped: {ast.unparse(node)} -> {ast.unparse(node.left)}", node.left))
    elif isinstance(node, ast.BoolOp):
        new = ast.Or if isinstance(node.op, ast.And) else ast.And
        out.append((f"{SYMBOLS[type(node.op)]} -> {SYMBOLS[new]}", ast.BoolOp(new(), node.values)))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        out.append(("a minus sign dropped", node.operand))
    elif isinstance(node, ast.AugAssign):
        out.append((f"a statement dropped: {ast.unparse(node)}", ast.Pass()))
        if isinstance(node.op, (ast.Add, ast.Sub)):
            out.append((f"= for {SYMBOLS[type(node.op)]}=", ast.Assign([node.target], node.value)))
        if not isinstance(node.target, ast.Subscript) and type(node.op) in SYMBOLS:
            # x *= v changes the array x holds, under every name that holds it; x = x * v makes a new one
            value = ast.BinOp(ast.parse(ast.unparse(node.target), mode="eval").body, node.op, node.value)
            out.append((f"{SYMBOLS[type(node.op)]}= in place -> a new array", ast.Assign([node.target], value)))
    elif isinstance(node, ast.Assign) and len(node.targets) == 1 and not isinstance(node.targets[0], ast.Tuple):
        out.append(("+= for =", ast.AugAssign(node.targets[0], ast.Add(), node.value)))
        if isinstance(node.targets[0], ast.Name) and isinstance(node.value, (ast.Call, ast.BinOp)):
            target = node.targets[0].id  # r worked out again in backward (from xhat, say) where forward saved self.r
            read = {n.attr for n in ast.walk(node.value) if on_self(n)}  # self.p.copy() -> self.p: a term dropped
            for attr in [a for a in saved if a not in read]:
                value = ast.Attribute(ast.Name("self", ast.Load()), attr, ast.Load())
                out.append((f"the saved value put in: {target} = self.{attr}", ast.Assign(node.targets, value)))
        if isinstance(node.targets[0], ast.Subscript):  # a[i] = v -> np.add.at(a, i, v): repeated indices add up
            target = node.targets[0]
            add_at = ast.Call(ast.parse("np.add.at", mode="eval").body, [target.value, target.slice, node.value], [])
            out.append(("a[i] = v -> np.add.at(a, i, v)", ast.Expr(add_at)))
    elif isinstance(node, ast.Constant) and type(node.value) in (int, float):
        v = node.value
        changed = [v + 1, v - 1, v * 2] + ([v / 2, -v] if v else [])
        for new in dict.fromkeys(int(c) if float(c).is_integer() else c for c in changed):  # 0.5 * 2: an axis, 1
            out.append((f"the constant {node.value!r} -> {new!r}", ast.Constant(new)))
    elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in TIES:
        new = TIES[type(node.ops[0])]
        what = f"{SYMBOLS[type(node.ops[0])]} -> {SYMBOLS[new]}"
        out.append((what, ast.Compare(node.left, [new()], node.comparators)))
    elif isinstance(node, ast.Compare) and len(node.ops) == 2:  # low <= x <= high asks an array for one True/False
        low, high = (
            ast.Compare(a, [op], [b]) for a, op, b in zip([node.left, *node.comparators], node.ops, node.comparators)
        )
        out.append(("a chained comparison -> (a) & (b)", ast.BinOp(low, ast.BitAnd(), high)))
    elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in names:
        out += [
            (f"the variable {node.id} -> {other}", ast.Name(other, ast.Load())) for other in names if other != node.id
        ]
    elif isinstance(node, ast.Attribute) and node.attr == "T":
        out.append(("a transpose removed (.T)", node.value))
        out.append((".T -> .swapaxes(-1, -2)", _method(node.value, "swapaxes", -1, -2)))  # .T reverses every axis
    elif on_self(node) and isinstance(node.ctx, ast.Load) and node.attr in saved:
        for other in saved:
            if other != node.attr:
                out.append((f"self.{node.attr} -> self.{other}", ast.Attribute(node.value, other, ast.Load())))
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        out += _call_alternatives(node, axes)
    elif isinstance(node, ast.If):
        out.append(("the condition negated", ast.If(ast.UnaryOp(ast.Not(), node.test), node.body, node.orelse)))
        out.append(("if -> while", ast.While(node.test, node.body, node.orelse)))  # sums one leading axis of two
    elif isinstance(node, ast.While):
        out.append(("while -> if", ast.If(node.test, node.body, node.orelse)))
    elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        out.append((f"a statement dropped: {ast.unparse(node)}", ast.Pass()))
        call = node.value
        if ast.unparse(call.func) == "np.add.at" and len(call.args) == 3:  # = for +=, with repeated indices
            target = ast.Subscript(call.args[0], call.args[1], ast.Store())
            out.append(("np.add.at(a, i, v) -> a[i] = v", ast.Assign([target], call.args[2])))
    elif isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple) and len(node.value.elts) > 1:
        out.append(("the returned values in reverse order", ast.Return(ast.Tuple(node.value.elts[::-1], ast.Load()))))
    return out


def _call_alternatives(node, axes):
    attr, out = node.func.attr, []
    on_numpy = isinstance(node.func.value, ast.Name) and node.func.value.id == "np"
    target = node.args[0] if on_numpy and node.args else node.func.value
    if attr == "pop" and not node.args:
        out.append(("pop() -> pop(0)", ast.Call(node.func, [ast.Constant(0)], [])))
    if attr == "pop" and len(node.args) == 1:
        out.append(("pop(0) -> pop()", ast.Call(node.func, [], [])))
    if on_numpy and attr in PRODUCTS:
        for other in PRODUCTS:
            if other != attr:
                product = ast.Call(ast.Attribute(node.func.value, other, ast.Load()), node.args, node.keywords)
                out.append((f"a product swapped: np.{attr} -> np.{other}", product))
    if attr in REDUCTIONS or attr in ("swapaxes", "transpose") or attr in DROPPABLE:
        out.append((f".{attr}(...) dropped", target))
    if on_numpy and attr == "exp" and len(node.args) == 1:  # exp(x) overflows past x = 709; exp(x - max) never
        shown = ast.unparse(target)
        for axis in axes:
            shifted = ast.parse(f"({shown}) - ({shown}).max(axis={axis}, keepdims=True)", mode="eval").body
            out.append((f"the max subtracted inside np.exp (axis={axis})", ast.Call(node.func, [shifted], [])))
    if attr in REDUCTIONS:
        swapped = ast.Call(ast.Attribute(node.func.value, REDUCTIONS[attr], ast.Load()), node.args, node.keywords)
        out.append((f"{attr} -> {REDUCTIONS[attr]}", swapped))
        if "keepdims" not in {k.arg for k in node.keywords}:
            keep = ast.keyword("keepdims", ast.Constant(True))
            out.append(("keepdims=True added", ast.Call(node.func, node.args, [*node.keywords, keep])))
    if _leaves_out_axis(node, attr, on_numpy):  # np.repeat(g, n), g.sum(): every axis, or the flattened array
        keepdims = attr in REDUCTIONS and "keepdims" not in {k.arg for k in node.keywords}
        for axis in axes:
            axis_added = ast.keyword("axis", ast.parse(axis, mode="eval").body)
            out.append((f"axis={axis} added", ast.Call(node.func, node.args, [axis_added, *node.keywords])))
            if keepdims:  # a reduction over everything where one axis belongs, beside its array
                both = [axis_added, *node.keywords, ast.keyword("keepdims", ast.Constant(True))]
                out.append((f"axis={axis} and keepdims=True added", ast.Call(node.func, node.args, both)))
    for i, keyword in enumerate(node.keywords):
        others = node.keywords[:i] + node.keywords[i + 1 :]
        out.append((f"{keyword.arg}= dropped", ast.Call(node.func, node.args, others)))
        if keyword.arg == "axis":
            for axis in axes:
                if axis != ast.unparse(keyword.value):
                    changed = ast.keyword("axis", ast.parse(axis, mode="eval").body)
                    out.append((f"axis -> {axis}", ast.Call(node.func, node.args, [*others[:i], changed, *others[i:]])))
        if keyword.arg == "keepdims" and isinstance(keyword.value, ast.Constant):
            flipped = ast.keyword("keepdims", ast.Constant(not keyword.value.value))
            out.append((f"keepdims -> {not keyword.value.value}", ast.Call(node.func, node.args, [*others, flipped])))
    return out


def _leaves_out_axis(node, attr, on_numpy):
    """Whether a call to a NumPy function that takes an axis (np.repeat, or the array method of its name) gives none,
    by keyword or in its place among the arguments."""
    try:
        parameters = list(inspect.signature(getattr(np, attr)).parameters)
    except (AttributeError, TypeError, ValueError):  # not NumPy's, or no signature to read
        return False
    given = len(node.args) + (0 if on_numpy else 1)  # g.repeat(n) is np.repeat(g, n)
    return "axis" in parameters and given <= parameters.index("axis") and "axis" not in {k.arg for k in node.keywords}


def _minus(value):
    return ast.UnaryOp(ast.USub(), value)


def _numpy(name, value):
    return ast.Call(ast.Attribute(ast.Name("np", ast.Load()), name, ast.Load()), [value], [])


def _method(value, method, *args):
    return ast.Call(ast.Attribute(value, method, ast.Load()), [ast.Constant(a) for a in args], [])


def _replace(parent, old, new):
    """Put `new` where `old` is among `parent`'s children."""
    for field, value in ast.iter_fields(parent):
        if value is old:
            setattr(parent, field, new)
            return
        if isinstance(value, list) and any(v is old for v in value):
            value[[i for i, v in enumerate(value) if v is old][0]] = new
            return
    raise ValueError("node not among parent's children")


def _unit(call):
    """Whether a call takes nothing but 0s and 1s (`gy.dtype.type(0)`): a typed 0 or 1, which added or multiplied
    changes a value's type alone (a Python division by zero into NumPy's), never a term a slip lost."""
    return all(isinstance(a, ast.Constant) and a.value in (0, 1) for a in call.args)


def ingredients(source, others):
    """The operations and calls of the files `others` (their source texts) that read names `source` binds, and
    nothing else but builtins, each once, unparsed: `(1 - b1)` for a file that binds b1. A term or an axis the
    file lost whole can be among them; whether it belongs is the check's to say. `self` is left out: another
    op's saved values are not this file's."""
    tree = ast.parse(source)
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    bound |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.arguments) for a in n.args + n.kwonlyargs}
    readable = (bound | BUILTINS) - {"self"}
    return sorted({code for names, code in _terms(tuple(others)) if names - BUILTINS and names <= readable})


@functools.cache
def _terms(texts):
    """(the names it reads, its code) of every operation and call of the files `texts` that may be an ingredient:
    made once (the engine's formulas are the same for every search)."""
    found = set()
    for text in texts:
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.BinOp) or isinstance(node, ast.Call) and not node.keywords and not _unit(node):
                code = ast.unparse(node)
                if len(code) <= LONGEST:
                    found.add((frozenset(n.id for n in ast.walk(node) if isinstance(n, ast.Name)), code))
    return found
