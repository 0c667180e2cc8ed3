"""The course's figures and tables.

Every figure of the course uses these colours and this style. The colours have
roles that stay the same in every lesson:

    data   amber   tokens, embeddings, data
    enc    teal    the encoder
    dec    rose    the decoder
    att    violet  attention
    muted  grey    everything in the background

Functions return the matplotlib Figure (or a `Table`); none calls `plt.show()`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import LinearSegmentedColormap, to_rgb
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch

COLORS = {
    "data": "#D97706",  # amber: tokens, embeddings
    "enc": "#0F8B8D",  # teal: encoder
    "dec": "#D1495B",  # rose: decoder
    "att": "#7B4FC9",  # violet: attention
    "muted": "#8A8F98",  # grey: background, references
    "ink": "#22252A",  # text
    "grid": "#E6E8EB",  # grid lines, masked cells
    "paper": "#FFFFFF",  # background
}
ROLES = ("data", "enc", "dec", "att", "muted")


def _check_role(role: str) -> str:
    if role not in COLORS:
        raise ValueError(f"unknown colour role {role!r}; choose one of {sorted(COLORS)}")
    return role


def tint(color: str, amount: float) -> tuple[float, float, float]:
    """`color` mixed with white: amount 0 is white, 1 is the colour itself."""
    if not 0 <= amount <= 1:
        raise ValueError(f"amount must be between 0 and 1, got {amount}")
    r, g, b = to_rgb(color)
    return (1 - amount + amount * r, 1 - amount + amount * g, 1 - amount + amount * b)


def role_cmap(role: str = "att") -> LinearSegmentedColormap:
    """A sequential colour map from white to a role's colour (heatmaps)."""
    color = COLORS[_check_role(role)]
    return LinearSegmentedColormap.from_list(f"tfs_{role}", [COLORS["paper"], color])


def use_course_style(retina: bool = True) -> dict:
    """Apply the course's matplotlib style and return the palette `COLORS`.

    In a notebook, figures are shown as retina PNGs (sharp on high-density
    screens; PNGs are not compared by nbval, their text is).
    """
    mpl.rcParams.update(
        {
            "figure.figsize": (6.4, 3.6),
            "figure.dpi": 100,
            "figure.facecolor": COLORS["paper"],
            "savefig.dpi": 200,
            "savefig.bbox": "tight",
            "font.size": 10,
            "axes.titlesize": 11,
            "axes.titleweight": "bold",
            "axes.titlelocation": "left",
            "axes.labelsize": 10,
            "axes.edgecolor": COLORS["muted"],
            "axes.labelcolor": COLORS["ink"],
            "axes.facecolor": COLORS["paper"],
            "axes.grid": True,
            "axes.axisbelow": True,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.prop_cycle": mpl.cycler(color=[COLORS[r] for r in ROLES]),
            "grid.color": COLORS["grid"],
            "grid.linewidth": 0.8,
            "xtick.color": COLORS["ink"],
            "ytick.color": COLORS["ink"],
            "text.color": COLORS["ink"],
            "legend.frameon": False,
            "lines.linewidth": 2,
            "image.cmap": "viridis",
            "svg.hashsalt": "tfs",
            "figure.max_open_warning": 0,
        }
    )
    if retina:
        try:
            from IPython import get_ipython
            from matplotlib_inline.backend_inline import set_matplotlib_formats
        except ImportError:  # not in IPython: nothing to configure
            pass
        else:
            if get_ipython() is not None:
                set_matplotlib_formats("retina")
    return dict(COLORS)


class Table:
    """A pandas DataFrame shown as a plain HTML table, with a text fallback.

    The HTML has no random ids or styles that change between runs, so the
    stored output of a notebook compares equal when re-executed.
    """

    def __init__(self, df, float_format: str | None = None, index: bool = False):
        self.df = df
        self.float_format = float_format
        self.index = index

    def _formatter(self):
        if self.float_format is None:
            return None
        return lambda x: format(x, self.float_format)

    def _repr_html_(self) -> str:
        return self.df.to_html(
            index=self.index,
            border=0,
            classes="tfs-table",
            float_format=self._formatter(),
            escape=True,
            na_rep="",
        )

    def __repr__(self) -> str:
        return self.df.to_string(index=self.index, float_format=self._formatter(), na_rep="")

    def __str__(self) -> str:
        return self.__repr__()


def table(df, float_format: str | None = None, index: bool = False) -> Table:
    """Show a pandas DataFrame as a deterministic table (HTML, plain-text fallback).

    `float_format` is a format spec such as ".3f" applied to every float column.
    """
    import pandas as pd

    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"table() expects a pandas DataFrame, got {type(df).__name__}")
    if float_format is not None:
        if not isinstance(float_format, str):
            raise TypeError(f"float_format must be a format spec like '.3f', got {float_format!r}")
        try:
            format(1.5, float_format)
        except ValueError as error:
            raise ValueError(f"float_format {float_format!r} is not a valid format spec") from error
    return Table(df, float_format=float_format, index=index)


def _as_rows(rows, what: str) -> list[list]:
    if isinstance(rows, str) or not isinstance(rows, Sequence):
        kind = type(rows).__name__
        raise TypeError(f"{what} must be a list of rows (a list of lists), got {kind}")
    out = []
    for row in rows:
        if isinstance(row, str) or not isinstance(row, Sequence | np.ndarray):
            raise TypeError(f"each row of {what} must be a list, got {type(row).__name__}: {row!r}")
        out.append(list(row))
    return out


def token_chips(
    rows,
    ids=None,
    labels: Sequence[str] | None = None,
    strong: Callable[[int, int, str], bool] | Sequence[Sequence[bool]] | None = None,
    role: str = "data",
    size: float = 10,
    title: str | None = None,
) -> Figure:
    """Draw tokens as rounded chips, one row of chips per sequence.

    rows:   list of rows, each a list of token strings.
    ids:    optional ids printed under the chips, same shape as `rows`.
    labels: optional label for each row, drawn on the left.
    strong: which chips to highlight (filled in the role's colour): either a
            function (row, position, token) -> bool or nested lists of bools.
            By default every chip is drawn strong.
    role:   the colour role of the chips ("data", "enc", "dec", "att", "muted").
    size:   font size of the tokens, in points.
    """
    _check_role(role)
    rows = _as_rows(rows, "rows")
    if not rows or not any(rows):
        raise ValueError("token_chips() needs at least one token")
    if ids is not None:
        ids = _as_rows(ids, "ids")
        if [len(r) for r in ids] != [len(r) for r in rows]:
            raise ValueError("ids must have the same shape as rows (one id per token)")
    if labels is not None and len(labels) != len(rows):
        raise ValueError(f"got {len(labels)} labels for {len(rows)} rows")
    if not isinstance(size, int | float) or size <= 0:
        raise ValueError(f"size must be a positive number of points, got {size!r}")
    if strong is None:
        is_strong = [[True] * len(row) for row in rows]
    elif callable(strong):
        is_strong = [
            [bool(strong(i, j, tok)) for j, tok in enumerate(row)] for i, row in enumerate(rows)
        ]
    else:
        is_strong = _as_rows(strong, "strong")
        if [len(r) for r in is_strong] != [len(r) for r in rows]:
            raise ValueError("strong must have the same shape as rows (one flag per token)")

    color = COLORS[role]
    scale = size / 10  # every distance below is in inches for 10-point text
    char_w, pad, gap = 0.085 * scale, 0.09 * scale, 0.07 * scale
    chip_h, row_gap = 0.30 * scale, (0.30 if ids is not None else 0.14) * scale
    label_w = 0.0
    if labels is not None:
        label_w = max(len(str(label)) for label in labels) * char_w + 0.2
    widths = [[max(len(str(tok)), 1) * char_w + 2 * pad for tok in row] for row in rows]
    total_w = label_w + max(sum(w) + gap * max(len(w) - 1, 0) for w in widths) + 0.1
    row_h = chip_h + row_gap
    title_h = 0.35 if title else 0.0
    total_h = len(rows) * row_h + 0.1 + title_h

    fig = plt.figure(figsize=(total_w, total_h))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, total_w)
    ax.set_ylim(0, total_h)
    ax.axis("off")
    for i, row in enumerate(rows):
        y = total_h - title_h - (i + 1) * row_h + row_gap
        if labels is not None:
            ax.text(label_w - 0.15, y + chip_h / 2, str(labels[i]), ha="right", va="center",
                    fontsize=size, color=COLORS["ink"])
        x = label_w
        for j, tok in enumerate(row):
            w = widths[i][j]
            filled = is_strong[i][j]
            ax.add_patch(
                FancyBboxPatch(
                    (x + 0.02, y), w - 0.04, chip_h,
                    boxstyle=f"round,pad=0,rounding_size={0.08 * scale}",
                    facecolor=tint(color, 0.85 if filled else 0.12),
                    edgecolor=color if filled else tint(color, 0.45),
                    linewidth=1.0,
                )
            )
            ax.text(x + w / 2, y + chip_h / 2, str(tok), ha="center", va="center", fontsize=size,
                    color=COLORS["paper"] if filled else COLORS["ink"])
            if ids is not None:
                ax.text(x + w / 2, y - 0.04 * scale, str(ids[i][j]), ha="center", va="top",
                        fontsize=size * 0.75, color=COLORS["muted"])
            x += w + gap
    if title:
        ax.text(0.05, total_h - 0.05, title, ha="left", va="top", fontsize=size * 1.1,
                fontweight="bold", color=COLORS["ink"])
    return fig


def heatmap(
    matrix,
    rows: Sequence[str] | None = None,
    cols: Sequence[str] | None = None,
    mask=None,
    role: str = "att",
    vmin: float | None = None,
    vmax: float | None = None,
    title: str | None = None,
    xlabel: str | None = None,
    ylabel: str | None = None,
    annotate: bool = False,
    fmt: str = ".2f",
    colorbar: bool = True,
    cmap=None,
    ax=None,
) -> Figure:
    """A matrix as a coloured grid with labelled rows and columns.

    Cells where `mask` is True, and cells that are NaN or infinite (a -inf
    score, for instance), are drawn in the grid colour, as "not there".
    `annotate=True` writes each value in its cell with `fmt`.
    """
    values = np.array(_to_numpy(matrix), dtype=float)
    if values.ndim != 2:
        raise ValueError(f"heatmap() needs a 2-D matrix, got shape {values.shape}")
    n_rows, n_cols = values.shape
    if rows is not None and len(rows) != n_rows:
        raise ValueError(f"got {len(rows)} row labels for a matrix with {n_rows} rows")
    if cols is not None and len(cols) != n_cols:
        raise ValueError(f"got {len(cols)} column labels for a matrix with {n_cols} columns")
    hidden = ~np.isfinite(values)
    if mask is not None:
        mask = np.array(_to_numpy(mask), dtype=bool)
        if mask.shape != values.shape:
            raise ValueError(f"mask has shape {mask.shape}, the matrix {values.shape}")
        hidden |= mask
    shown = np.ma.masked_array(np.where(hidden, 0.0, values), mask=hidden)

    if ax is None:
        width = min(max(2.5 + 0.42 * n_cols, 4.0), 11.0)
        height = min(max(1.2 + 0.36 * n_rows, 2.4), 9.0)
        fig, ax = plt.subplots(figsize=(width, height))
    else:
        fig = ax.figure
    colormap = cmap if cmap is not None else role_cmap(_check_role(role))
    if isinstance(colormap, str):
        colormap = mpl.colormaps[colormap]
    colormap = colormap.with_extremes(bad=COLORS["grid"])  # masked cells: the grid colour
    image = ax.imshow(shown, cmap=colormap, vmin=vmin, vmax=vmax, aspect="auto",
                      interpolation="nearest")
    ax.grid(False)
    for side in ("top", "right", "bottom", "left"):
        ax.spines[side].set_visible(False)
    if cols is not None:
        ax.set_xticks(range(n_cols), [str(c) for c in cols], rotation=45 if n_cols > 6 else 0,
                      ha="right" if n_cols > 6 else "center")
    if rows is not None:
        ax.set_yticks(range(n_rows), [str(r) for r in rows])
    # thin white lines between the cells
    ax.set_xticks(np.arange(-0.5, n_cols, 1), minor=True)
    ax.set_yticks(np.arange(-0.5, n_rows, 1), minor=True)
    ax.grid(which="minor", color=COLORS["paper"], linewidth=1.5)
    ax.tick_params(which="minor", length=0)
    ax.tick_params(which="major", length=0)
    if annotate:
        low, high = image.get_clim()
        for i in range(n_rows):
            for j in range(n_cols):
                if hidden[i, j]:
                    continue
                level = (values[i, j] - low) / (high - low) if high > low else 0.0
                ax.text(j, i, format(values[i, j], fmt), ha="center", va="center", fontsize=8,
                        color=COLORS["paper"] if level > 0.6 else COLORS["ink"])
    if colorbar:
        fig.colorbar(image, ax=ax, fraction=0.046, pad=0.03).outline.set_visible(False)
    if title:
        ax.set_title(title)
    if xlabel:
        ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    return fig


def bars(
    mapping: Mapping[str, float],
    colors: Sequence[str] | str | None = None,
    title: str | None = None,
    xlabel: str | None = None,
    fmt: str = ",",
    ax=None,
) -> Figure:
    """A horizontal bar chart of {label: value}, largest at the top, values written at the ends.

    `colors`: one colour for all bars, a role name, or one colour per bar (in
    the order of `mapping`). `fmt` formats the values written next to the bars.
    """
    if not isinstance(mapping, Mapping) or not mapping:
        raise TypeError("bars() expects a non-empty mapping {label: value}")
    labels = [str(k) for k in mapping]
    values = [float(v) for v in mapping.values()]
    if colors is None:
        colors = [COLORS["data"]] * len(values)
    elif isinstance(colors, str):
        colors = [COLORS.get(colors, colors)] * len(values)
    else:
        colors = [COLORS.get(c, c) for c in colors]
        if len(colors) != len(values):
            raise ValueError(f"got {len(colors)} colours for {len(values)} bars")
    order = np.argsort(values, kind="stable")  # smallest at the bottom
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 0.9 + 0.38 * len(values)))
    else:
        fig = ax.figure
    positions = np.arange(len(values))
    ax.barh(positions, [values[i] for i in order], color=[colors[i] for i in order], height=0.65)
    ax.set_yticks(positions, [labels[i] for i in order])
    ax.grid(axis="y", visible=False)
    ax.tick_params(axis="y", length=0)
    largest = max(values) if max(values) > 0 else 1.0
    for y, i in zip(positions, order, strict=True):
        text = format(int(values[i]) if values[i].is_integer() else values[i], fmt)
        ax.text(values[i] + largest * 0.01, y, text, va="center", fontsize=9, color=COLORS["ink"])
    ax.set_xlim(0, largest * 1.18)
    if xlabel:  # an axis only when asked for: the values are written on the bars
        ax.set_xlabel(xlabel)
    else:
        ax.xaxis.set_visible(False)
        ax.spines["bottom"].set_visible(False)
        ax.grid(axis="x", visible=False)
    if title:
        ax.set_title(title)
    return fig


def _to_numpy(x):
    if hasattr(x, "detach"):  # a torch tensor
        return x.detach().cpu().numpy()
    return np.asarray(x)
