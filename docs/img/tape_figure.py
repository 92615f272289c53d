"""Draws docs/img/tape.svg: the tape of f(x, y) = x*y + sin(x) at (2, 3) and its sweep.

The numbers are deltaad's own (``deltaad.make_delta``); run ``python docs/img/tape_figure.py``
to redraw after changing the picture.
"""

import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text in the SVG
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

import deltaad as ad  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def f(x, y):
    a = x * y
    b = ad.sin(x)
    return a + b


def main(out=os.path.join(HERE, "tape.svg")):
    value, delta = ad.make_delta(f, 2.0, 3.0)
    adj = ad.delta.eval(1.0, delta, {})
    c = math.cos(2.0)
    rows = [  # (binding, program line, adjoint after the sweep)
        ("x0 : input", "x = 2.0", "%.3f" % adj[0]),
        ("x1 : input", "y = 3.0", "%.3f" % adj[1]),
        ("x2 := 3.0·x0 + 2.0·x1", "a = x * y", "1"),
        ("x3 := %.3f·x0" % c, "b = sin(x)", "1"),
        ("x4 := 1·x2 + 1·x3", "return a + b", "1  (seed)"),
    ]
    fig, ax = plt.subplots(figsize=(9.2, 4.2))
    ax.set_xlim(0, 9.2)
    ax.set_ylim(-0.95, 5.4)
    ax.axis("off")
    ax.text(0.2, 5.05, "program", fontsize=11, weight="bold")
    ax.text(2.6, 5.05, "tape (one binding per operation)", fontsize=11,
            weight="bold")
    ax.text(7.0, 5.05, "adjoints", fontsize=11, weight="bold")
    for k, (binding, line, a) in enumerate(rows):
        y = 4.2 - k * 0.9
        ax.text(0.2, y, line, family="monospace", fontsize=10, va="center")
        box = FancyBboxPatch((2.6, y - 0.3), 3.7, 0.6, boxstyle="round,pad=0.02",
                             fc="#e8eaf6" if k >= 2 else "#f5f5f5", ec="#3f51b5")
        ax.add_patch(box)
        ax.text(2.75, y, binding, family="monospace", fontsize=10, va="center")
        ax.text(7.0, y, "adj[x%d] = %s" % (k, a), family="monospace", fontsize=10, va="center")
        ax.add_patch(FancyArrowPatch((1.9, y), (2.55, y), arrowstyle="->", mutation_scale=10,
                                     color="0.5"))
    # the sweep: newest binding first, up the tape
    ax.add_patch(FancyArrowPatch((6.6, 0.6), (6.6, 3.9), arrowstyle="-|>", mutation_scale=18,
                                 lw=2, color="#c62828"))
    ax.text(6.75, 0.25, "backward sweep:\nnewest first, once", fontsize=9, color="#c62828",
            va="center")
    ax.text(0.2, -0.35, "x3's binding adds %.3f·adj[x3] to adj[x0]; x2's adds 3.0·adj[x2] to "
            "adj[x0] and 2.0·adj[x2] to adj[x1]," % c, fontsize=9)
    ax.text(0.2, -0.75, "so  ∂f/∂x = 3 + cos 2 = %.3f  and  ∂f/∂y = 2." % adj[0], fontsize=9)
    fig.tight_layout()
    fig.savefig(out)
    if len(sys.argv) > 1:
        fig.savefig(sys.argv[1], dpi=90)
    plt.close(fig)


if __name__ == "__main__":
    main()
