"""Rules of every order for a variadic multilinear primitive (`np.einsum`).

A function `E(x_1, ..., x_n)` linear in each operand has a JVP in operand q
that is `E` itself with `x_q` replaced by the tangent, `J_q(t; x) = E(x | q->t)`,
and a VJP `V_q(g; x)` that is linear in `g` and in every other operand. Their
derivatives are again such maps, with more operands replaced (the pairing is
bilinear, `<a, b> = Re sum(a * b)`, as everywhere in the rule table):

    d/dt J_q(t; x)   : JVP J_q(t'; x)              VJP V_q(h; x)
    d/dx_r J_q(t; x) : JVP J_r(t'; x | q->t)       VJP V_r(h; x | q->t)
    d/dg V_q(g; x)   : JVP V_q(g'; x)              VJP J_q(h; x)
    d/dx_r V_q(g; x) : JVP V_q(g; x | r->t')       VJP V_r(g; x | q->h)

(the last from <h, V_q(g; x | r->d)> = <g, E(x | q->h, r->d)>). So one small
family of callables, `Form`s, closes under differentiation: a Form is J_q or
V_q applied to the operands of the original call with some of them replaced by
the Form's own leading arguments. A Form's rules are Forms, made when the
compiler or the eager tape first asks for them (`_LazyRules`), so the rules
differentiate to any order without reading a star-argument signature.

Rule signatures follow the table: a Form of depth k takes 2k leading arguments
(cotangent or tangent, then the output, per order) and then the primitive's
own arguments. The outputs (`ans`) and the operand a Form stands in for (read
for its shape only) carry no derivative: they are static arguments.
"""
from __future__ import annotations

from tapeflow.rules import registry
from tapeflow.rules.shapes import carries_float as _carries_float


class Family:
    """A variadic multilinear primitive, given by its first-order maps.

    jvp(q, t, args, kwargs)   E(args | q->t)
    vjp(q, g, args, kwargs)   the cotangent of operand q, in its shape
    is_operand(args, p)       whether args[p] is an operand (not a subscript string)

    `module`: the rule module the Forms are listed under (`rules.coverage`).
    """

    def __init__(self, fn, name, jvp, vjp, is_operand, module):
        self.fn, self.name, self.module = fn, name, module
        self.jvp, self.vjp, self.is_operand = jvp, vjp, is_operand
        self._forms = {}

    def form(self, kind, q, first, subs, base, requires):
        key = (kind, q, first, subs, base, requires)
        form = self._forms.get(key)
        if form is None:
            form = self._forms[key] = Form(self, *key)
            static = {i for i in range(1, base, 2)}          # every order's output
            used = {first} | {i for _, i in subs}
            static |= {i for i in range(0, base, 2) if i not in used}
            static |= {base + q} | {base + p for p, _ in subs}
            registry.RULES[form] = registry.Primitive(
                form, f'{self.name} ({form.__name__})', _LazyRules(form, 'vjp'),
                _LazyRules(form, 'jvp'), static_argnums=frozenset(static))
            registry.RULES_OF_RULES.add(form)
        return form

    def first_order(self, q):
        """(VJP, JVP) of the primitive in its argument q."""
        return self.form('V', q, 0, (), 2, (q,)), self.form('J', q, 0, (), 2, (q,))


class Form:
    """`J_q` or `V_q` (`kind`) of `inputs[first]`, on the primitive's arguments
    `inputs[base:]` with operand p replaced by `inputs[i]` for each (p, i) in `subs`.
    Zero unless every `args[p]`, p in `requires`, is an operand (the subscripts carry
    no derivative: a rule asked for one gives zero, after checking it holds no float)."""

    def __init__(self, family, kind, q, first, subs, base, requires):
        self.family, self.kind, self.q = family, kind, q
        self.first, self.subs, self.base, self.requires = first, subs, base, requires
        depth = base // 2
        self.__module__ = family.module
        self.__name__ = f'_{family.name.rsplit(".", 1)[-1]}_{"vjp" if kind == "V" else "jvp"}' \
                        f'{q}' + (f'_order{depth}' if depth > 1 else '')

    def __call__(self, *inputs, **kwargs):
        args = list(inputs[self.base:])
        for p in self.requires:
            if not self.family.is_operand(args, p):
                if _carries_float(args[p]):
                    raise NotImplementedError(f'{self.family.name} has no derivative in its '
                                              f'argument {p} (its subscripts)')
                return 0.0
        for p, i in self.subs:
            args[p] = inputs[i]
        rule = self.family.jvp if self.kind == 'J' else self.family.vjp
        return rule(self.q, inputs[self.first], args, kwargs)

    def __repr__(self):
        return f'<{self.__name__}: {self.kind}_{self.q} of input {self.first}, ' \
               f'operands {dict(self.subs)} replaced, depth {self.base // 2}>'

    def derivative(self, index, mode):
        """The Form computing this Form's VJP (`mode='vjp'`) or JVP in input `index`, or
        None where the input carries no derivative."""
        shift = {p: i + 2 for p, i in self.subs}
        if index == self.first:
            kind = {('J', 'jvp'): 'J', ('J', 'vjp'): 'V',
                    ('V', 'jvp'): 'V', ('V', 'vjp'): 'J'}[self.kind, mode]
            return self._make(kind, self.q, 0, shift)
        operand = next((p for p, i in self.subs if i == index), None)
        if operand is None and index >= self.base and index - self.base not in shift:
            operand = index - self.base
        if operand is None or operand == self.q:
            return None
        r, requires = operand, tuple(sorted(set(self.requires) | {operand}))
        if self.kind == 'J':            # operand q is the Form's first input
            return self._make('J' if mode == 'jvp' else 'V', r, 0,
                              {**shift, self.q: self.first + 2}, requires)
        if mode == 'jvp':
            return self._make('V', self.q, self.first + 2, {**shift, r: 0}, requires)
        return self._make('V', r, self.first + 2, {**shift, self.q: 0}, requires)

    def _make(self, kind, q, first, subs, requires=None):
        return self.family.form(kind, q, first, tuple(sorted(subs.items())), self.base + 2,
                                self.requires if requires is None else requires)


class _LazyRules(dict):
    """A Form's rules by input position, made on first use."""

    def __init__(self, form, mode):
        super().__init__()
        self.form, self.mode = form, mode

    def __missing__(self, index):
        rule = self.form.derivative(index, self.mode)
        if rule is None:
            raise KeyError(index)
        self[index] = rule
        return rule

    def get(self, index, default=None):
        try:
            return self[index]
        except KeyError:
            return default

    def __contains__(self, index):
        return self.get(index) is not None
