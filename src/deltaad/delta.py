"""The paper's Delta data type (Krawiec et al. Fig. 10) as plain Python objects, and its
reference ``eval`` over a dict (the DeltaMap).

This is for people learning and debugging, and the oracle the tests hold the fast ``eval``
against; the fast path never builds these objects. ``deltaad.make_delta`` turns a run of a
program into the ``Let``-nested term that ``runDelta`` builds (Fig. 11); ``str`` prints it in
the style of Fig. 12. Long ``Let`` spines are walked iteratively, so a term from a program of a
million operations prints and evaluates without hitting Python's recursion limit.
"""


class Delta:
    """A linear map from the output's cotangent to the inputs' (paper §6-7)."""

    __slots__ = ()

    def __repr__(self):
        return str(self)


class _ZeroType(Delta):
    __slots__ = ()

    def __str__(self):
        return "Zero"

    def __eq__(self, other):
        return isinstance(other, _ZeroType)

    def __hash__(self):
        return 0


Zero = _ZeroType()


class Scale(Delta):
    __slots__ = ("factor", "delta")

    def __init__(self, factor, delta):
        self.factor = factor
        self.delta = delta

    def __str__(self):
        f = self.factor
        fs = repr(f) if not isinstance(f, float) or f >= 0 else "(%r)" % f
        return "Scale %s %s" % (fs, _paren(self.delta))

    def __eq__(self, other):
        return isinstance(other, Scale) and (self.factor, self.delta) == (other.factor, other.delta)


class Add(Delta):
    __slots__ = ("left", "right")

    def __init__(self, left, right):
        self.left = left
        self.right = right

    def __str__(self):
        return "Add %s %s" % (_paren(self.left), _paren(self.right))

    def __eq__(self, other):
        return isinstance(other, Add) and (self.left, self.right) == (other.left, other.right)


class Var(Delta):
    __slots__ = ("id",)

    def __init__(self, id):
        self.id = id

    def __str__(self):
        return "Var x%d" % self.id

    def __eq__(self, other):
        return isinstance(other, Var) and self.id == other.id


class Let(Delta):
    """``Let id rhs body``: ``id`` names ``rhs`` inside ``body`` (explicit sharing)."""

    __slots__ = ("id", "rhs", "body")

    def __init__(self, id, rhs, body):
        self.id = id
        self.rhs = rhs
        self.body = body

    def spine(self):
        """The chain of ``(id, rhs)`` of nested Lets, outermost first, and the final body."""
        binds = []
        d = self
        while isinstance(d, Let):
            binds.append((d.id, d.rhs))
            d = d.body
        return binds, d

    def __str__(self):
        binds, body = self.spine()
        lines = ["Let x%d = %s in" % (i, rhs) for i, rhs in binds]
        lines.append(str(body))
        return "\n".join(lines)

    def __eq__(self, other):
        return isinstance(other, Let) and self.spine() == other.spine()


def _paren(d):
    return str(d) if isinstance(d, _ZeroType) else "(%s)" % d


def eval(scale, delta, dmap):
    """Fig. 10: add ``scale`` times the linear map ``delta`` into ``dmap`` (id -> adjoint).

    ``Let uid u1 u2`` evaluates the body ``u2`` first; the contribution it leaves at ``uid`` is
    then pushed through ``u1`` exactly once and ``uid`` is deleted — which is why shared
    subterms cost once, not once per use. ``dmap`` is updated in place (the paper's §7.3
    linearity) and returned.
    """
    if isinstance(delta, Let):
        binds, body = delta.spine()
        eval(scale, body, dmap)
        for uid, rhs in reversed(binds):
            if uid in dmap:
                x = dmap.pop(uid)
                eval(x, rhs, dmap)
        return dmap
    if isinstance(delta, _ZeroType):
        return dmap
    if isinstance(delta, Scale):
        return eval(scale * delta.factor, delta.delta, dmap)
    if isinstance(delta, Add):
        eval(scale, delta.left, dmap)
        return eval(scale, delta.right, dmap)
    if isinstance(delta, Var):
        old = dmap.get(delta.id)
        dmap[delta.id] = scale if old is None else old + scale
        return dmap
    raise TypeError("deltaad.delta.eval: not a Delta: %r" % (delta,))


def term(parents, coefs):
    """The right-hand side of one binding ``sum_i c_i * Var(p_i)`` as a Delta term."""
    parts = [Var(p) if (type(c) is float and c == 1.0) else Scale(c, Var(p)) for p, c in zip(parents, coefs)]
    if not parts:
        return Zero
    d = parts[0]
    for p in parts[1:]:
        d = Add(d, p)
    return d
