"""numpy.gradient, numpy.interp (in x and fp) and numpy.linspace with complex values: finite
differences in the real and imaginary directions, forward and reverse, to second order, with
numpy's values to the bit (also for gradient with uneven spacings, where numpy's complex
arithmetic rounds differently from its real one)."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from complex_checks import check, crandom
from helpers import scaled

seeds = st.integers(0, 2**31 - 1)


@given(seed=seeds, shape=st.sampled_from([(5,), (3, 4), (4, 3, 3)]), edge=st.sampled_from([1, 2]),
       spacing=st.sampled_from(["none", "scalar", "uneven"]), axis=st.sampled_from([None, 0, -1]))
@scaled(0.3)
def test_gradient(seed, shape, edge, spacing, axis):
    rng = np.random.default_rng(seed)
    z = crandom(rng, shape)
    axes = range(len(shape)) if axis is None else [axis]
    if spacing == "none":
        sp = ()
    elif spacing == "scalar":
        sp = (0.7,)
    else:
        sp = tuple(np.cumsum(rng.uniform(0.5, 1.5, shape[a])) for a in axes)
    check(lambda z: np.gradient(z, *sp, axis=axis, edge_order=edge), [z], seed,
          second=seed % 2 == 0)


@given(seed=seeds, n=st.integers(2, 6), m=st.integers(1, 5), ends=st.booleans())
@scaled(0.3)
def test_interp(seed, n, m, ends):
    rng = np.random.default_rng(seed)
    xp = np.cumsum(rng.uniform(0.3, 1.0, n))
    fp = crandom(rng, (n,))
    # x away from the knots (kinks) and, without a period, the ends
    cells = rng.integers(0, n - 1, m)
    x = xp[cells] + rng.uniform(0.1, 0.9, m) * (xp[cells + 1] - xp[cells])
    if ends:  # points beyond the ends, where the value is left or right (derivative 0)
        x = np.concatenate([x, [xp[0] - 0.5, xp[-1] + 0.5]])
    kw = {"left": 1j, "right": 2.0 - 1j} if ends else {}
    check(lambda x, fp: np.interp(x, xp, fp, **kw), [x, fp], seed)
    check(lambda fp: np.interp(x, xp, fp), [fp], seed, second=False)


@given(seed=seeds, num=st.integers(1, 6), endpoint=st.booleans(),
       shape=st.sampled_from([(), (2,), (2, 3)]), real_stop=st.booleans())
@scaled(0.3)
def test_linspace(seed, num, endpoint, shape, real_stop):
    rng = np.random.default_rng(seed)
    a = crandom(rng, shape)
    b = crandom(rng, shape)
    b = b.real if real_stop else b
    check(lambda a, b: np.linspace(a, b, num, endpoint=endpoint), [a, b], seed)
    if num > 1 or not endpoint:  # (one sample with its endpoint: the step is a nan)
        check(lambda a, b: np.linspace(a, b, num, endpoint=endpoint, retstep=True, axis=-1),
              [a, b], seed, second=False)
