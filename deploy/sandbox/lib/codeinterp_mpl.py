"""Matplotlib backend for the codeinterp sandbox (MPLBACKEND=module://codeinterp_mpl).

It renders with Agg, like the inline backend of a notebook. plt.show() hands every open
figure to the kernel driver, which saves it as a PNG result; outside the driver (a script
run from bash) show() does nothing, exactly as with the Agg backend.

A figure is not drawn again when nothing in it changed. The usual chart code ends with
plt.savefig("chart.png") and leaves the figure open, which cost two more full renders:
pyplot.savefig's closing draw_idle() (there for a GUI to repaint), and the driver's
rich PNG of the still-open figure. After a save with the arguments the driver would use
(a PNG at the default dpi, no other options), the canvas keeps the bytes it wrote and
marks the figure current; matplotlib marks it stale again on any change to any artist
in it, and the saved bytes are used only while it is not. (Data changed in place in an
array the figure still refers to marks nothing stale, for matplotlib's own redraws too.)
"""

import os

import codeinterp_hooks
import matplotlib
from matplotlib.backend_bases import FigureManagerBase
from matplotlib.backends.backend_agg import FigureCanvasAgg

FigureManager = FigureManagerBase

# A saved PNG larger than this is not kept in memory; the driver renders that figure again.
MAX_KEPT = 16 << 20


class FigureCanvas(FigureCanvasAgg):
    _saved = None  # (PNG bytes, matplotlib.rcParams as they were at the save)

    def print_figure(self, filename, *args, **kwargs):
        self._saved = None
        result = super().print_figure(filename, *args, **kwargs)
        if not args and self._default_png_save(filename, kwargs):
            png = _read(filename)
            if png is not None:
                self._saved = (png, dict.copy(matplotlib.rcParams))
                # The save set and then restored the face colour, which marks the figure
                # stale though nothing in it changed.
                self.figure.stale = False
        return result

    def _default_png_save(self, filename, kwargs):
        """Whether a save with these arguments draws what the driver's fig.savefig(p,
        format="png") would: Figure.savefig passes only dpi, from rcParams."""
        kwargs = dict(kwargs)
        fmt = kwargs.pop("format", None)
        if not isinstance(filename, (str, os.PathLike)):
            return False
        if fmt is None:
            fmt = os.path.splitext(os.fspath(filename))[1][1:]
        dpi = kwargs.pop("dpi", None)
        return (str(fmt).lower() == "png" and not kwargs
                and dpi == matplotlib.rcParams["savefig.dpi"]
                and dpi in ("figure", self.figure.dpi))

    def saved_png(self):
        """The PNG bytes of the code's last save of this figure, if a save now would
        draw the same; else None."""
        if self._saved is None or self.figure.stale:
            return None
        png, rc = self._saved
        try:
            same = dict.copy(matplotlib.rcParams) == rc
        except Exception:  # a value whose comparison fails: draw again
            same = False
        return png if same else None

    def draw_idle(self, *args, **kwargs):
        # No window shows this canvas: drawing a figure that has not changed since its
        # last draw or save only costs time (pyplot.savefig calls this after each save).
        if self.figure.stale:
            super().draw_idle(*args, **kwargs)


def _read(filename):
    try:
        with open(filename, "rb") as f:
            if os.fstat(f.fileno()).st_size > MAX_KEPT:
                return None
            png = f.read(MAX_KEPT + 1)
    except OSError:
        return None
    return png if png.startswith(b"\x89PNG") and len(png) <= MAX_KEPT else None


def show(*args, **kwargs):
    if codeinterp_hooks.show is not None:
        codeinterp_hooks.show()
