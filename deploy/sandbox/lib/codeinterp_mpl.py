"""Matplotlib backend for the codeinterp sandbox (MPLBACKEND=module://codeinterp_mpl).

It renders with Agg, like the inline backend of a notebook. plt.show() hands every open
figure to the kernel driver, which saves it as a PNG result; outside the driver (a script
run from bash) show() does nothing, exactly as with the Agg backend.
"""

import codeinterp_hooks
from matplotlib.backend_bases import FigureManagerBase
from matplotlib.backends.backend_agg import FigureCanvasAgg

FigureCanvas = FigureCanvasAgg
FigureManager = FigureManagerBase


def show(*args, **kwargs):
    if codeinterp_hooks.show is not None:
        codeinterp_hooks.show()
