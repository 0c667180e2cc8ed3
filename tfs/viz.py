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
    cell_lines: bool | None = None,
    ax=None,
) -> Figure:
    """A matrix as a coloured grid with labelled rows and columns.

    Cells where `mask` is True, and cells that are NaN or infinite (a -inf
    score, for instance), are drawn in the grid colour, as "not there".
    `annotate=True` writes each value in its cell with `fmt`. Thin white lines
    separate the cells (`cell_lines`; by default only when both sides have at
    most 40 cells, so large matrices stay readable).
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
    if cell_lines is None:
        cell_lines = max(n_rows, n_cols) <= 40
    if cell_lines:  # thin white lines between the cells
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


# --- Diagrams: encode-then-decode and the Transformer from a bird's-eye view ----------------
#
# Both diagrams are drawn on one axes that spans the whole figure, in inches
# (x from 0 to the figure's width, y from 0 to its height), so text keeps its size
# whatever the number of tokens or layers.

#: The parts of `architecture()` that `highlight=` accepts.
ARCHITECTURE_PARTS = (
    "embedding",
    "positions",
    "encoder",
    "decoder",
    "self_attention",
    "masked_attention",
    "cross_attention",
    "ffn",
    "norm",
    "memory",
    "output",
)
ARCHITECTURE_KINDS = ("encoder-decoder", "decoder-only", "encoder-only")


def _canvas(width: float, height: float) -> tuple[Figure, plt.Axes]:
    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.axis("off")
    return fig, ax


def _block(ax, x, y, w, h, text, color, strong=True, fontsize=9.0, gid=None, fill=0.85,
           rounding=0.07, text_color=None, bold=False):
    """A rounded box centred at (x, y), filled with `color` (or a pale tint when not strong)."""
    patch = FancyBboxPatch(
        (x - w / 2, y - h / 2), w, h,
        boxstyle=f"round,pad=0,rounding_size={rounding}",
        facecolor=tint(color, fill if strong else 0.08),
        edgecolor=color if strong else tint(color, 0.35),
        linewidth=1.1 if strong else 0.8,
        zorder=3,
    )
    if gid:
        patch.set_gid(gid)
    ax.add_patch(patch)
    if text:
        if text_color is None:
            text_color = COLORS["paper"] if strong and fill > 0.6 else COLORS["ink"]
        if not strong:
            text_color = COLORS["muted"]
        ax.text(x, y, text, ha="center", va="center", fontsize=fontsize, color=text_color,
                fontweight="bold" if bold else "normal", zorder=4)
    return patch


def _arrow(ax, start, end, color=None, width=1.1, style="-|>", alpha=1.0, connection=None,
           zorder=2, head=7.0):
    from matplotlib.patches import FancyArrowPatch

    patch = FancyArrowPatch(
        start, end, arrowstyle=style, mutation_scale=head, color=color or COLORS["ink"],
        linewidth=width, alpha=alpha, connectionstyle=connection or "arc3", zorder=zorder,
        shrinkA=0, shrinkB=0,
    )
    ax.add_patch(patch)
    return patch


def _check_tokens(tokens, what: str) -> list[str]:
    if isinstance(tokens, str) or not isinstance(tokens, Sequence | np.ndarray):
        raise TypeError(f"{what} must be a list of token strings, got {type(tokens).__name__}")
    tokens = list(tokens)
    if not tokens:
        raise ValueError(f"{what} needs at least one token")
    for token in tokens:
        if not isinstance(token, str) or not token:
            raise TypeError(f"each token of {what} must be a non-empty string, got {token!r}")
    if len(tokens) > 16:
        raise ValueError(f"{what} has {len(tokens)} tokens; the diagram draws at most 16")
    return tokens


def _check_title(title) -> None:
    if title is not None and not isinstance(title, str):
        raise TypeError(f"title must be a string or None, got {type(title).__name__}")


def seq2seq_diagram(
    source: Sequence[str] = ("Я", "видел", "кота", "на", "мате"),
    target: Sequence[str] = ("I", "saw", "a", "cat", "on", "a", "mat"),
    variant: str = "bottleneck",
    focus: int | None = None,
    weights=None,
    title: str | None = None,
    context: str = "recurrence",
) -> Figure:
    """Encode, then decode: a recurrent encoder–decoder drawn step by step.

    The source tokens (amber) enter the encoder's cells (teal) one at a time;
    the decoder's cells (rose) start from what the encoder passed on and emit
    the target tokens one at a time, each step reading the previous target
    token ("<s>" first).

    variant="bottleneck": the encoder's last state is the only thing the
        decoder gets, one fixed-size vector whatever the source length.
    variant="attention":  every encoder state is kept; the decoder step
        `focus` (default: the middle one) takes a weighted sum of all of them
        (Bahdanau attention, violet). `weights`, one per source token, are the
        attention weights drawn (line widths and numbers); by default a peak at
        the source position in proportion to the step. They are normalised to
        sum to 1.
    context (attention only): where the context c_t goes. "recurrence" (Bahdanau et
        al., 2014): into the decoder cell h_t, which reads it with the previous token;
        "output" (Luong et al., 2015): beside h_t into the output layer that scores the
        next token, the recurrence never sees it.
    """
    source = _check_tokens(source, "source")
    target = _check_tokens(target, "target")
    if variant not in ("bottleneck", "attention"):
        raise ValueError(f"variant must be 'bottleneck' or 'attention', got {variant!r}")
    _check_title(title)
    m, n = len(source), len(target)
    if variant == "bottleneck" and (focus is not None or weights is not None
                                    or context != "recurrence"):
        raise ValueError("focus, weights and context belong to variant='attention'")
    if context not in ("recurrence", "output"):
        raise ValueError(f"context must be 'recurrence' or 'output', got {context!r}")
    if focus is None:
        focus = n // 2
    if isinstance(focus, bool) or not isinstance(focus, int | np.integer):
        raise TypeError(f"focus must be an integer decoder step, got {focus!r}")
    if not 0 <= focus < n:
        raise ValueError(f"focus must be a decoder step between 0 and {n - 1}, got {focus}")
    if weights is None:
        centre = focus * (m - 1) / max(n - 1, 1)
        weights = np.exp(-2.0 * (np.arange(m) - centre) ** 2)
    weights = np.array(_to_numpy(weights), dtype=float).reshape(-1)
    if weights.shape != (m,):
        raise ValueError(f"weights needs one value per source token ({m}), got {weights.size}")
    if not np.all(np.isfinite(weights)) or np.any(weights < 0) or weights.sum() <= 0:
        raise ValueError("weights must be finite, non-negative and not all zero")
    weights = weights / weights.sum()

    char_w, size = 0.075, 9.0
    chip_w = lambda token: max(len(token), 1) * char_w + 0.16  # noqa: E731
    widest = max(chip_w(t) for t in [*source, *target, "<s>"])
    step = max(0.78, widest + 0.22)
    cell = 0.46
    attention = variant == "attention"
    gap = 1.15 if not attention else 0.75  # between the encoder's last cell and the decoder
    x0 = 0.75
    enc_x = [x0 + k * step for k in range(m)]
    dec_start = enc_x[-1] + gap + (0.55 if not attention else 0.0)
    dec_x = [dec_start + t * step for t in range(n)]
    width = dec_x[-1] + step / 2 + 0.35
    if title is None:
        title = ("Encode, then decode: the whole source squeezed into one vector"
                 if not attention else
                 "With attention: every decoder step gets its own mix of all encoder states")
    box_w, box_h = 1.35, 0.42  # the attention box, above and right of the focus step
    box_x = max(dec_x[focus] + step / 2, box_w / 2 + 0.1)
    c_label = f"c{focus + 1} = Σ α·s".translate(_SUBSCRIPT)
    if context == "output":
        c_label += f", read with h{focus + 1} by the output layer".translate(_SUBSCRIPT)
    if attention:
        width = max(width, box_x + box_w / 2 + 0.2 + 0.075 * len(c_label))  # room for c_label
    width = max(width, 0.3 + 0.1 * len(title))  # room for the title
    y_in, y_cell, y_out = 0.55, 1.35, 2.15
    y_att = 3.15
    height = (3.5 if attention else 2.5) + (0.45 if title else 0.0)
    fig, ax = _canvas(width, height)
    enc, dec, data, att = COLORS["enc"], COLORS["dec"], COLORS["data"], COLORS["att"]

    def chip(x, y, token, role_color, gid):
        _block(ax, x, y, chip_w(token), 0.3, token, role_color, fontsize=size, gid=gid,
               rounding=0.08)

    for k, (x, token) in enumerate(zip(enc_x, source, strict=True)):
        chip(x, y_in, token, data, "source_token")
        _arrow(ax, (x, y_in + 0.15), (x, y_cell - cell / 2))
        _block(ax, x, y_cell, cell, cell, f"s{k + 1}".translate(_SUBSCRIPT), enc, fontsize=size,
               gid="encoder_cell")
        if k:
            _arrow(ax, (enc_x[k - 1] + cell / 2, y_cell), (x - cell / 2, y_cell))
    inputs = ["<s>", *target[:-1]]
    for t, (x, token) in enumerate(zip(dec_x, target, strict=True)):
        chip(x, y_in, inputs[t], data, "decoder_input")
        _arrow(ax, (x, y_in + 0.15), (x, y_cell - cell / 2))
        _block(ax, x, y_cell, cell, cell, f"h{t + 1}".translate(_SUBSCRIPT), dec, fontsize=size,
               gid="decoder_cell")
        _arrow(ax, (x, y_cell + cell / 2), (x, y_out - 0.15))
        chip(x, y_out, token, data, "target_token")
        if t:
            _arrow(ax, (dec_x[t - 1] + cell / 2, y_cell), (x - cell / 2, y_cell))

    from matplotlib.patches import PathPatch
    from matplotlib.path import Path as MplPath

    if not attention:  # the whole source as one vector between the two halves
        vx = (enc_x[-1] + dec_x[0]) / 2
        squares = 4
        side = 0.16
        for i in range(squares):
            _block(ax, vx, y_cell + (i - (squares - 1) / 2) * side, side, side, "", enc,
                   gid="bottleneck", rounding=0.02)
        _arrow(ax, (enc_x[-1] + cell / 2, y_cell), (vx - side / 2 - 0.02, y_cell))
        _arrow(ax, (vx + side / 2 + 0.02, y_cell), (dec_x[0] - cell / 2, y_cell))
        ax.text(vx, y_cell + squares * side / 2 + 0.12, "one vector", ha="center", va="bottom",
                fontsize=8.5, color=enc, fontweight="bold")
    else:
        _arrow(ax, (enc_x[-1] + cell / 2, y_cell), (dec_x[0] - cell / 2, y_cell))
        xf = dec_x[focus]
        _block(ax, box_x, y_att, box_w, box_h, f"attention, step {focus + 1}", att,
               fontsize=8.5, gid="attention")
        largest = weights.max()
        for k, x in enumerate(enc_x):
            path_width = 0.4 + 3.2 * weights[k] / largest
            bezier = MplPath([(x, y_cell + cell / 2), (x, y_att), (box_x - box_w / 2, y_att)],
                             [MplPath.MOVETO, MplPath.CURVE3, MplPath.CURVE3])
            line = PathPatch(bezier, facecolor="none", edgecolor=att, linewidth=path_width,
                             alpha=0.35 + 0.65 * weights[k] / largest, zorder=1)
            line.set_gid("attention_weight")
            ax.add_patch(line)
            if weights[k] >= 0.005:  # the weights that round to 0.00 are left unlabelled
                ax.text(x + 0.05, y_cell + cell / 2 + 0.08, f"{weights[k]:.2f}", ha="left",
                        va="bottom", fontsize=7.5, color=att, zorder=4)
        # the context c_t goes down, between the output chips, into the focus cell
        # (Bahdanau) or into the output layer, on the way from h_t to its token (Luong)
        x_gap = xf + step / 2
        _arrow(ax, (box_x, y_att - box_h / 2), (x_gap, y_out + 0.3), color=att, width=1.4,
               style="-")
        if context == "recurrence":
            _arrow(ax, (x_gap, y_out + 0.3), (xf + cell / 2 + 0.02, y_cell + cell / 2 + 0.02),
                   color=att, width=1.4).set_gid("context_into_cell")
        else:
            y_join = (y_cell + cell / 2 + y_out - 0.15) / 2  # halfway from h_t to its token
            _arrow(ax, (x_gap, y_out + 0.3), (x_gap, y_join), color=att, width=1.4, style="-")
            _arrow(ax, (x_gap, y_join), (xf + 0.03, y_join), color=att,
                   width=1.4).set_gid("context_into_output")
            ax.plot([xf], [y_join], marker="o", markersize=5, color=att, zorder=5)
        ax.text(box_x + box_w / 2 + 0.08, y_att, c_label, ha="left", va="center", fontsize=8.5,
                color=att)
    # what each half is
    for xs, label, color in ((enc_x, "encoder", enc), (dec_x, "decoder", dec)):
        ax.plot([xs[0] - cell / 2, xs[-1] + cell / 2], [0.3, 0.3], color=color, linewidth=2.0)
        ax.text((xs[0] + xs[-1]) / 2, 0.22, label, ha="center", va="top", fontsize=9,
                color=color, fontweight="bold")
    if title:
        ax.text(0.12, height - 0.12, title, ha="left", va="top", fontsize=10.5,
                fontweight="bold", color=COLORS["ink"])
    return fig


_SUBSCRIPT = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def _check_size(value, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be a positive integer or None, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value}")
    return int(value)


def architecture(
    n_layers: int | None = 6,
    highlight: str | Sequence[str] | None = None,
    kind: str = "encoder-decoder",
    norm: str = "post",
    tied: bool = True,
    shared_vocab: bool = False,
    d_model: int | None = None,
    n_heads: int | None = None,
    d_ff: int | None = None,
    vocab_size: int | None = None,
    title: str | None = None,
) -> Figure:
    """The Transformer from a bird's-eye view, after Figure 1 of Vaswani et al. (2017).

    Bottom to top: token embeddings (amber) plus positional encodings; a stack
    of `n_layers` encoder layers (teal frame: self-attention, feed-forward, each
    with a residual connection and a norm); a stack of `n_layers` decoder layers
    (rose frame: masked self-attention, cross-attention over the encoder's
    output, feed-forward); the output projection (with `tied=True` the
    transposed embedding matrix Eᵀ) and the softmax. Attention is violet.

    n_layers:   the number of layers written next to each stack (None: "N").
    highlight:  a part name or a list of them, drawn strong while the rest
                fades: one of ARCHITECTURE_PARTS ("embedding", "positions",
                "encoder", "decoder", "self_attention", "masked_attention",
                "cross_attention", "ffn", "norm", "memory", "output").
    kind:       "encoder-decoder" (the original), "decoder-only" (GPT: no
                encoder, no cross-attention) or "encoder-only" (BERT).
    norm:       "post" (the original: Add & Norm after each sub-layer) or
                "pre" (Norm before each sub-layer, a final Norm on top).
    shared_vocab: with `tied` and an encoder-decoder, one vocabulary for both
                languages: the encoder's embedding is the same E too, drawn joined
                to the decoder's by a second dashed "same E" line.
    d_model, n_heads, d_ff, vocab_size: when given, written on the blocks.
    """
    from matplotlib.lines import Line2D
    from matplotlib.patches import Circle

    n_layers = _check_size(n_layers, "n_layers")
    if kind not in ARCHITECTURE_KINDS:
        raise ValueError(f"kind must be one of {ARCHITECTURE_KINDS}, got {kind!r}")
    if norm not in ("post", "pre"):
        raise ValueError(f"norm must be 'post' or 'pre', got {norm!r}")
    if not isinstance(tied, bool):
        raise TypeError(f"tied must be True or False, got {tied!r}")
    if not isinstance(shared_vocab, bool):
        raise TypeError(f"shared_vocab must be True or False, got {shared_vocab!r}")
    d_model, n_heads = _check_size(d_model, "d_model"), _check_size(n_heads, "n_heads")
    d_ff, vocab_size = _check_size(d_ff, "d_ff"), _check_size(vocab_size, "vocab_size")
    _check_title(title)
    if highlight is None:
        wanted = None
    else:
        parts = [highlight] if isinstance(highlight, str) else highlight
        if not isinstance(parts, Sequence | set | frozenset | tuple):
            raise TypeError(f"highlight must be a part name or a list of them, got {highlight!r}")
        wanted = set()
        for part in parts:
            if part not in ARCHITECTURE_PARTS:
                raise ValueError(f"unknown part {part!r}; choose from {ARCHITECTURE_PARTS}")
            wanted.add(part)
        if not wanted:
            raise ValueError("highlight needs at least one part (or None for no highlight)")

    def strong(part: str, column: str | None = None) -> bool:
        return wanted is None or part in wanted or (column is not None and column in wanted)

    sized = any(v is not None for v in (d_model, n_heads, d_ff, vocab_size))
    block_w, block_h = 2.3, (0.48 if sized else 0.4)
    gap, pad = 0.26, 0.24  # between blocks; inside the frame, above and below the blocks
    lane = 0.38  # room beside the blocks for the residual connections
    frame_w = block_w + 2 * lane
    two_stacks = kind == "encoder-decoder"
    margin = 1.25  # the "N ×" labels
    columns = []
    if kind in ("encoder-decoder", "encoder-only"):
        columns.append("encoder")
    if kind in ("encoder-decoder", "decoder-only"):
        columns.append("decoder")
    between = 1.1
    x_of = {}
    x = margin + frame_w / 2
    for column in columns:
        x_of[column] = x
        x += frame_w + between
    width = x - between - frame_w / 2 + margin + (0.5 if tied else 0.0)
    head_column = columns[-1]
    outer = {"encoder": -1, "decoder": 1} if two_stacks else {columns[0]: -1}

    def num(v):
        return f"{v:,}"

    def sub(main: str, detail: str | None) -> str:
        return main if not (sized and detail) else f"{main}\n{detail}"

    heads = f"{n_heads} heads" if n_heads else None
    if heads and d_model:
        heads += f" × {d_model // n_heads}" if d_model % n_heads == 0 else f", d_model {d_model}"
    ffn_detail = (f"{num(d_model)} → {num(d_ff)} → {num(d_model)}"
                  if d_model and d_ff else (f"d_ff = {num(d_ff)}" if d_ff else None))
    emb_detail = (f"{num(vocab_size)} × {num(d_model)}" if vocab_size and d_model else
                  (f"|V| = {num(vocab_size)}" if vocab_size else
                   (f"d_model = {num(d_model)}" if d_model else None)))
    out_detail = (f"{num(d_model)} → {num(vocab_size)}" if vocab_size and d_model else
                  (f"→ {num(vocab_size)}" if vocab_size else None))
    sublayers = {
        "encoder": [("self_attention", "Self-attention", "att")],
        "decoder": [("masked_attention", "Masked self-attention", "att")],
    }
    if two_stacks:
        sublayers["decoder"].append(("cross_attention", "Cross-attention", "att"))
    for column in columns:
        sublayers[column].append(("ffn", "Feed-forward", "enc" if column == "encoder" else "dec"))

    # every block of a stack, bottom to top: (part, label, role, height, residual start?)
    def stack(column):
        blocks = []
        for part, label, role in sublayers[column]:
            detail = heads if role == "att" else ffn_detail
            if norm == "post":
                blocks.append(dict(part=part, label=sub(label, detail), role=role, start=True))
                blocks.append(dict(part="norm", label="Add & Norm", role="muted", end=True))
            else:
                blocks.append(dict(part="norm", label="Norm", role="muted", start=True))
                blocks.append(dict(part=part, label=sub(label, detail), role=role))
                blocks.append(dict(part="norm", label="+", role="muted", end=True, add=True))
        return blocks

    stacks = {column: stack(column) for column in columns}
    y_tokens, y_emb, y_pos = 0.3, 0.95, 1.6
    frame_bottom = y_pos + 0.45
    heights = {}
    for column, blocks in stacks.items():
        y = frame_bottom + pad
        for block in blocks:
            h = 0.3 if block.get("add") else block_h
            block["y"], block["h"] = y + h / 2, h
            y += h + gap
        heights[column] = y - gap + pad
    frame_top = {column: heights[column] for column in columns}
    top = max(frame_top.values())
    y_head = frame_top[head_column] + 0.5
    head_blocks = []
    if norm == "pre":
        head_blocks.append(("norm", "Final Norm", "muted"))
    out_label = "Linear Eᵀ (tied)" if tied else "Linear W_out"
    head_blocks += [("output", sub(out_label, out_detail), "data"), ("output", "Softmax", "muted")]
    if title is None:
        title = {
            "encoder-decoder": "The Transformer: an encoder and a decoder, no recurrence",
            "decoder-only": "A decoder-only Transformer: masked self-attention, no encoder",
            "encoder-only": "An encoder-only Transformer: self-attention over all tokens",
        }[kind]
    width = max(width, 0.3 + 0.1 * len(title))  # room for the title
    title_h = 0.5 if title else 0.1
    height = y_head + len(head_blocks) * (block_h + gap) + 0.3 + title_h
    height = max(height, top + 0.6 + title_h)
    fig, ax = _canvas(width, height)
    ink, muted = COLORS["ink"], COLORS["muted"]
    fontsize = 8.5

    def draw(x, y, w, h, label, role, part, column=None, gid=None):
        return _block(ax, x, y, w, h, label, COLORS[role], strong=strong(part, column),
                      fontsize=fontsize, gid=gid or part, fill=0.85 if role != "muted" else 0.55,
                      text_color=ink if role == "muted" else None)

    for column in columns:
        xc = x_of[column]
        color = COLORS["enc" if column == "encoder" else "dec"]
        side = outer[column]
        # tokens, embedding, positions
        token_label = ("tokens" if not two_stacks else
                       ("source tokens" if column == "encoder" else "target tokens, shifted right"))
        ax.text(xc, y_tokens, token_label, ha="center", va="center", fontsize=fontsize,
                color=ink)
        _arrow(ax, (xc, y_tokens + 0.15), (xc, y_emb - block_h / 2))
        draw(xc, y_emb, block_w, block_h, sub("Embedding E", emb_detail), "data", "embedding",
             gid="embedding")
        _arrow(ax, (xc, y_emb + block_h / 2), (xc, y_pos - 0.15))
        plus = Circle((xc, y_pos), 0.15, facecolor=COLORS["paper"], zorder=3,
                                  edgecolor=COLORS["data"] if strong("positions") else
                                  tint(COLORS["data"], 0.35), linewidth=1.2)
        plus.set_gid("positions")
        ax.add_patch(plus)
        ax.text(xc, y_pos, "+", ha="center", va="center", fontsize=11, zorder=4,
                color=ink if strong("positions") else muted)
        pos_x = xc + side * (block_w / 2 + 0.3)
        draw(pos_x, y_pos, 1.75, 0.34, "Positional encoding", "data", "positions",
             gid="positions")
        _arrow(ax, (pos_x - side * 0.875, y_pos), (xc + side * 0.15, y_pos))
        _arrow(ax, (xc, y_pos + 0.15), (xc, frame_bottom + pad))
        # the stack of layers
        frame = FancyBboxPatch(
            (xc - frame_w / 2, frame_bottom), frame_w, frame_top[column] - frame_bottom,
            boxstyle="round,pad=0,rounding_size=0.12",
            facecolor=tint(color, 0.10 if strong(column, column) else 0.03),
            edgecolor=color if strong(column, column) else tint(color, 0.35),
            linewidth=1.6, zorder=1,
        )
        frame.set_gid(f"{column}_frame")
        ax.add_patch(frame)
        layers = "N" if n_layers is None else str(n_layers)
        label_x = xc + side * (frame_w / 2 + 0.12)
        ha = "left" if side > 0 else "right"
        mid = (frame_bottom + frame_top[column]) / 2
        ax.text(label_x, mid + 0.12, f"{layers} ×", ha=ha, va="bottom", fontsize=15,
                fontweight="bold", color=color)
        ax.text(label_x, mid + 0.05, f"{column}\nlayers", ha=ha, va="top", fontsize=fontsize,
                color=color, fontweight="bold")
        blocks = stacks[column]
        start_y = None
        for i, block in enumerate(blocks):
            y, h = block["y"], block["h"]
            if block.get("add"):
                circle = Circle((xc, y), h / 2, facecolor=COLORS["paper"], zorder=3,
                                            edgecolor=muted, linewidth=1.1)
                circle.set_gid("norm")
                ax.add_patch(circle)
                ax.text(xc, y, "+", ha="center", va="center", fontsize=11, color=ink, zorder=4)
            else:
                draw(xc, y, block_w, h, block["label"], block["role"], block["part"], column)
            if i + 1 < len(blocks):
                _arrow(ax, (xc, y + h / 2), (xc, blocks[i + 1]["y"] - blocks[i + 1]["h"] / 2))
            # residual connections: branch below the sub-layer, rejoin at the add
            if block.get("start"):
                start_y = y - h / 2 - gap / 2
            if block.get("end") and start_y is not None:
                lane_x = xc + side * (block_w / 2 + lane / 2)
                edge = h / 2 if block.get("add") else block_w / 2
                ax.plot([xc, lane_x, lane_x], [start_y, start_y, y], color=muted,
                        linewidth=1.1, zorder=2, solid_joinstyle="round")
                _arrow(ax, (lane_x, y), (xc + side * edge, y), color=muted)
                start_y = None
        if column == head_column:
            _arrow(ax, (xc, blocks[-1]["y"] + blocks[-1]["h"] / 2), (xc, y_head - block_h / 2))
            y = y_head
            for i, (part, label, role) in enumerate(head_blocks):
                draw(xc, y, block_w, block_h, label, role, part, gid=part)
                if label.startswith("Linear"):
                    y_linear = y
                nxt = y + block_h + gap
                _arrow(ax, (xc, y + block_h / 2),
                       (xc, nxt - block_h / 2 if i + 1 < len(head_blocks) else y + block_h / 2
                        + gap))
                y = nxt
            ax.text(xc, y - gap / 2 + 0.05, "p(token)" if kind == "encoder-only" else
                    "p(next token)", ha="center", va="bottom",
                    fontsize=fontsize + 0.5, color=ink)
            if tied:  # the output projection reuses the embedding matrix
                tie_x = xc + (frame_w / 2 + 1.05)
                tie = Line2D(
                    [xc + block_w / 2, tie_x, tie_x, xc + block_w / 2],
                    [y_emb, y_emb, y_linear, y_linear], color=COLORS["data"], linewidth=1.1,
                    linestyle=(0, (4, 3)), zorder=2, alpha=1.0 if strong("output") or
                    strong("embedding") else 0.4)
                tie.set_gid("tie")
                ax.add_line(tie)
                ax.text(tie_x + 0.07, (y_emb + y_linear) / 2, "same E", rotation=90,
                        ha="left", va="center", fontsize=fontsize, color=COLORS["data"],
                        alpha=tie.get_alpha())
    if tied and shared_vocab and two_stacks:  # one vocabulary: the encoder's E is the same E
        left, right = x_of["encoder"] + block_w / 2, x_of["decoder"] - block_w / 2
        alpha = 1.0 if strong("embedding") else 0.4
        shared = Line2D([left, right], [y_emb, y_emb], color=COLORS["data"], linewidth=1.1,
                        linestyle=(0, (4, 3)), zorder=2, alpha=alpha)
        shared.set_gid("shared_embedding")
        ax.add_line(shared)
        ax.text((left + right) / 2, y_emb + 0.06, "same E", ha="center", va="bottom",
                fontsize=fontsize, color=COLORS["data"], alpha=alpha)
    # the encoder's output (the memory) goes to every decoder layer's cross-attention
    if two_stacks:
        xe, xd = x_of["encoder"], x_of["decoder"]
        last = stacks["encoder"][-1]
        cross = next(b for b in stacks["decoder"] if b["part"] == "cross_attention")
        y_mem = frame_top["encoder"] + 0.3
        lane_x = (xe + frame_w / 2 + xd - frame_w / 2) / 2
        color = COLORS["enc"] if strong("memory") else tint(COLORS["enc"], 0.35)
        ax.plot([xe, xe, lane_x, lane_x], [last["y"] + last["h"] / 2, y_mem, y_mem, cross["y"]],
                color=color, linewidth=1.6, zorder=2, gid="memory")
        _arrow(ax, (lane_x, cross["y"]), (xd - block_w / 2, cross["y"]), color=color, width=1.6)
        ax.text((xe + lane_x) / 2, y_mem + 0.06, "encoder output (memory)", ha="center",
                va="bottom", fontsize=fontsize, color=color, fontweight="bold")
    if title:
        ax.text(0.15, height - 0.15, title, ha="left", va="top", fontsize=11, fontweight="bold",
                color=ink)
    return fig
