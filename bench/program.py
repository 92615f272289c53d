"""What a benchmark program is (``Program``) and the registry the program modules add to
(``register``, ``PROGRAMS``): kept apart from the programs, so that the scalar programs
(``programs``) and the array programs (``array_programs``) both import it and not each other."""

from dataclasses import dataclass, field


def _geometric(lo, hi, count):
    """``count`` integers from ``lo`` to ``hi`` spaced evenly on a log scale (distinct)."""
    if count <= 1:
        return [int(hi)]
    out = []
    for k in range(count):
        v = int(round(lo * (hi / lo) ** (k / (count - 1))))
        if not out or v > out[-1]:
            out.append(v)
    return out


@dataclass
class Program:
    """A benchmark program.

    ``fn(ns, n, xs)``: the program. ``ops(n)``: its operation count. ``make_input(n, rng)``:
    its input (a flat list of floats, or whatever the supporting modes accept).
    ``n_max``: the largest n of the full preset (3 decades below it is its smallest);
    ``ladder``: small sizes added in front of the sweep for the modes that explore them
    (the ablations, which blow up long before the main sizes). ``check_n``: the size at which
    every mode's gradient is checked against the reference before it is timed.
    ``kind``: "scalar" (Python floats) or e.g. "array"; ``modes``: explicit allow-list or None.
    ``ops_are_bindings``: ``ops(n)`` is exactly the number of bindings deltaad records (checked
    by the reference run); set False for array programs, whose ``ops`` counts scalar work.
    """

    name: str
    fn: object
    ops: object
    make_input: object
    n_max: int
    check_n: int
    ladder: list = field(default_factory=list)
    description: str = ""
    ops_text: str = ""
    kind: str = "scalar"
    modes: object = None
    fd_eps: float = 1e-6
    ops_are_bindings: bool = True
    spec_n: object = None        # the size a target refers to (array programs)
    preset_sizes: object = None  # {preset: [n, ...]}: explicit sweeps instead of the defaults
    overhead: bool = False       # reported as µs per operation (small-array overhead table)
    output: str = "scalar"       # "list": returns a list; reverse modes pull back ones;
                                 # "jacobian": returns a list; reverse modes take its jacrev
    float_runs: object = None    # n -> how many runs of fn the float baseline makes (None: 1)

    def n_for_ops(self, target):
        """The smallest n whose operation count reaches ``target``."""
        lo, hi = 1, 1
        while self.ops(hi) < target:
            hi *= 2
        while lo < hi:
            mid = (lo + hi) // 2
            if self.ops(mid) < target:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def sizes(self, preset):
        """The main sweep of n for a preset: ``full`` 11 sizes over 3 decades of n up to
        ``n_max``; ``quick`` 5 sizes from 10^3 to 10^5 operations; ``tiny`` 3 sizes from
        50 to 500 operations. ``preset_sizes`` overrides this per preset."""
        if self.preset_sizes and preset in self.preset_sizes:
            return list(self.preset_sizes[preset])
        if preset == "full":
            return _geometric(max(1, self.n_max // 1000), self.n_max, 11)
        if preset == "quick":
            return _geometric(self.n_for_ops(1000), self.n_for_ops(100_000), 5)
        if preset == "tiny":
            return _geometric(self.n_for_ops(50), self.n_for_ops(500), 3)
        raise ValueError("unknown preset %r" % preset)

    def small_sizes(self, preset):
        """The ladder for exploring modes, below the main sweep."""
        first = self.sizes(preset)[0]
        lad = [n for n in self.ladder if n < first]
        if preset == "tiny":
            lad = lad[:3]
        return lad

    def supports(self, mode):
        if self.modes is not None:
            return mode.name in self.modes
        return self.kind in mode.kinds


PROGRAMS = {}


def register(program):
    PROGRAMS[program.name] = program
    return program
