"""The mutation pass's lowerings of dicts (a mixin of its rewriter, like `lowering`):
their methods as the writes `d[k] = v` and removals they are, their views as lists.

    d.update(m)            for each (k, v) of dict_pairs(m): d[k] = v   (keywords: d['k'] = v)
    v = d.setdefault(k, a) if k not in d: d[k] = a;  v = d[k]
    v = d.pop(k[, a])      v = d[k] (or a where k is absent);  delete_item(d, k)
    v = d.get(k[, a])      v = d[k] if k in d else a
    d.keys()/values()/items()/copy()   dict_keys(d) ... (`rules.dicts`)
    del d[k], del ys[i]    delete_item(d, k) of a dict; ys.pop(i) of a list

A view is a list made when it is read: one read again after its dict changed is refused
(Python's view would show the change). Runs on ANF; every statement made is one too.
"""
from __future__ import annotations

from tapeflow.analysis import aliasing as al
from tapeflow.rules import dicts
from tapeflow.syntax import ast, nodes
from tapeflow.syntax.anno import Key, getanno, setanno

VIEWS = dicts.READS


class DictLowerings:
    def helper(self, fn):
        """A name for `fn` in the generated code (resolved: its rules are found)."""
        ref = nodes.name(self.new('_' + fn.__name__))
        self.ctx.bind(ref.id, fn)
        setanno(ref, Key.RESOLVED, fn)
        return ref

    # ---------------------------------------------------------------- writes

    def lower_dict_update(self, call, name, args):
        out = []
        for keyword in call.keywords:
            out.append(nodes.assign(nodes.subscript(name, nodes.const(keyword.arg), store=True),
                                    keyword.value))
        if 'other' not in args:
            return out
        pairs, i, pair = self.new('_pairs'), self.new('_i'), self.new('_pair')
        key, value = self.new('_key'), self.new('_value')
        body = [nodes.assign(pair, nodes.subscript(pairs, nodes.name(i))),
                nodes.assign(key, nodes.subscript(pair, nodes.const(0))),
                nodes.assign(value, nodes.subscript(pair, nodes.const(1))),
                nodes.assign(nodes.subscript(name, nodes.name(key), store=True), nodes.name(value))]
        length = nodes.call(nodes.builtin('len'), pairs)
        return [nodes.assign(pairs, nodes.call(self.helper(dicts.dict_pairs), args['other'])),
                nodes.for_(i, nodes.call(nodes.builtin('range'), length), body)] + out

    def lower_dict_setdefault(self, call, name, args):
        if 'key' not in args:
            return None
        key, default = args['key'], args.get('default', nodes.const(None))
        has = self.new('_has')

        def made(target):
            out = [nodes.assign(has, nodes.compare(key, ast.In(), nodes.name(name))),
                   nodes.if_(has, [nodes.pass_()], [nodes.assign(
                       nodes.subscript(name, nodes.clone(key), store=True), default)])]
            if target is not None:
                out.append(nodes.assign(target, nodes.subscript(name, nodes.clone(key))))
            return out
        return made

    def lower_dict_pop(self, call, name, args):
        if 'key' not in args:
            return None
        key = args['key']
        removal = nodes.expr_stmt(nodes.call(self.helper(dicts.delete_item), name, nodes.clone(key)))
        if 'default' not in args:
            return lambda target: ([nodes.assign(target, nodes.subscript(name, key))]
                                   if target is not None else []) + [removal]
        has = self.new('_has')

        def made(target):
            taken = [nodes.assign(target, nodes.subscript(name, nodes.clone(key)))] \
                if target is not None else []
            given = [nodes.assign(target, args['default'])] if target is not None else []
            return [nodes.assign(has, nodes.compare(key, ast.In(), nodes.name(name))),
                    nodes.if_(has, taken + [removal], given or [nodes.pass_()])]
        return made

    def lower_delete(self, call, name, args):
        """`del x[k]`: of a dict, the removal the reverse sweep undoes; of a list, its pop."""
        kind = self.kind_now
        key = call.args[1]
        if kind == al.DICT:
            return [nodes.expr_stmt(call)]
        if kind == al.LIST:
            return [nodes.expr_stmt(nodes.call(nodes.attribute(name, 'pop'), key))]
        return None

    # ---------------------------------------------------------------- reads

    def dict_read(self, stmt, call, target, state):
        """`v = d.get(k[, a])` and the views `d.keys()` ... of a dict; None: not one."""
        method = call.func.attr
        name = call.func.value.id
        if method == 'get' and call.args and not call.keywords and len(call.args) <= 2:
            key = call.args[0]
            default = call.args[1] if len(call.args) > 1 else nodes.const(None)
            has = self.new('_has')
            return [nodes.assign(has, nodes.compare(key, ast.In(), nodes.name(name))),
                    nodes.if_(has, [nodes.assign(target, nodes.subscript(name, nodes.clone(key)))],
                              [nodes.assign(target, default)])]
        if method in VIEWS and not call.args and not call.keywords:
            if method != 'copy':
                self.check_view(stmt, name, target)
            return [nodes.assign(target, nodes.call(self.helper(VIEWS[method]), name))]
        return None

    def check_view(self, stmt, name, view):
        """Refuse a view of `name` read after a write into it (or in a loop that writes it)."""
        order = list(nodes.statements(self.fdef.body))
        at = next((k for k, s in enumerate(order) if s is stmt), None)
        if at is None:
            return
        written = False
        for later in order[at + 1:]:
            if view in _reads(later) and written:
                raise self.error(later, f'{view} is a view of the dict {name}, read here after '
                                        f'{name} changed: a list of it made then would not show '
                                        f'the change -- write list(...) where it is read')
            if _writes(later, name):
                written = True


def _reads(stmt) -> set:
    return {n.id for n in nodes.walk_terms(stmt) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load)} if not isinstance(stmt, (ast.For, ast.While, ast.If)) \
        else {n.id for n in nodes.walk_terms(stmt.iter if isinstance(stmt, ast.For) else stmt.test)
              if isinstance(n, ast.Name)}


def _writes(stmt, name) -> bool:
    if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Subscript) and \
            isinstance(stmt.targets[0].value, ast.Name) and stmt.targets[0].value.id == name:
        return True
    call = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign)) else None
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and \
            isinstance(call.func.value, ast.Name) and call.func.value.id == name:
        return call.func.attr in ('update', 'pop', 'popitem', 'setdefault', 'clear')
    if isinstance(call, ast.Call) and getanno(call.func, Key.RESOLVED) is dicts.delete_item:
        return True
    return False
