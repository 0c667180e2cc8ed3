import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.colors import to_hex, to_rgb  # noqa: E402
from matplotlib.patches import FancyBboxPatch  # noqa: E402

from tfs import viz  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_palette_has_every_role_in_its_hue():
    colors = viz.use_course_style()
    assert set(viz.ROLES) <= set(colors)
    hue = {role: matplotlib.colors.rgb_to_hsv(to_rgb(colors[role]))[0] * 360 for role in viz.ROLES}
    assert 25 <= hue["data"] <= 50  # amber
    assert 170 <= hue["enc"] <= 195  # teal
    assert hue["dec"] >= 330 or hue["dec"] <= 10  # rose
    assert 255 <= hue["att"] <= 285  # violet
    assert matplotlib.colors.rgb_to_hsv(to_rgb(colors["muted"]))[1] < 0.15  # grey


def test_use_course_style_sets_the_colour_cycle():
    viz.use_course_style()
    cycle = [to_hex(c["color"]) for c in matplotlib.rcParams["axes.prop_cycle"]]
    assert cycle[:3] == [to_hex(viz.COLORS[r]) for r in ("data", "enc", "dec")]
    assert matplotlib.rcParams["axes.spines.top"] is False


def test_use_course_style_returns_a_copy():
    colors = viz.use_course_style()
    colors["data"] = "#000000"
    assert viz.COLORS["data"] != "#000000"


def title_of(ax):  # the course style puts titles on the left
    return "".join(ax.get_title(loc=loc) for loc in ("left", "center", "right"))


def frame():
    return pd.DataFrame({"block": ["attention", "feed-forward"], "params": [1056, 2112],
                         "share": [1 / 3, 2 / 3]})


def test_table_is_deterministic_html_with_text_fallback():
    first, second = viz.table(frame(), float_format=".3f"), viz.table(frame(), float_format=".3f")
    assert first._repr_html_() == second._repr_html_()
    html = first._repr_html_()
    assert html.startswith("<table") and "id=" not in html and "0.333" in html
    assert "attention" in repr(first) and "0.667" in repr(first)


def test_table_escapes_html():
    html = viz.table(pd.DataFrame({"token": ["<bos>"]}))._repr_html_()
    assert "&lt;bos&gt;" in html


@pytest.mark.parametrize("bad", [[1, 2], {"a": [1]}, None])
def test_table_rejects_non_dataframes(bad):
    with pytest.raises(TypeError, match="DataFrame"):
        viz.table(bad)


def test_table_rejects_bad_format():
    with pytest.raises(ValueError, match="format spec"):
        viz.table(frame(), float_format="%.3f")


def chips(fig):
    return [p for p in fig.axes[0].patches if isinstance(p, FancyBboxPatch)]


def texts(fig):
    return [t.get_text() for t in fig.axes[0].texts]


def test_token_chips_draws_one_chip_per_token_with_ids_and_labels():
    fig = viz.token_chips([["▁The", "▁cat"], ["<bos>", "▁Кот", "."]], ids=[[5, 9], [1, 40, 3]],
                          labels=["en", "ru"])
    assert len(chips(fig)) == 5
    for word in ["▁The", "▁cat", "<bos>", "▁Кот", ".", "5", "40", "en", "ru"]:
        assert word in texts(fig)


def test_token_chips_highlights_what_the_predicate_selects():
    fig = viz.token_chips([["a", "b", "c"]], strong=lambda i, j, tok: tok == "b", role="dec")
    faces = [p.get_facecolor()[:3] for p in chips(fig)]
    strong_face = viz.tint(viz.COLORS["dec"], 0.85)
    assert np.allclose(faces[1], strong_face)
    assert not np.allclose(faces[0], strong_face) and np.allclose(faces[0], faces[2])


def test_token_chips_accepts_nested_flags():
    fig = viz.token_chips([["a", "b"]], strong=[[False, True]])
    faces = [p.get_facecolor()[:3] for p in chips(fig)]
    assert not np.allclose(faces[0], faces[1])


@pytest.mark.parametrize(
    "kwargs, error",
    [
        (dict(rows="hello"), TypeError),
        (dict(rows=[]), ValueError),
        (dict(rows=[["a"]], ids=[[1, 2]]), ValueError),
        (dict(rows=[["a"]], labels=["x", "y"]), ValueError),
        (dict(rows=[["a"]], role="blue"), ValueError),
        (dict(rows=[["a"]], strong=[[True, False]]), ValueError),
        (dict(rows=[["a"]], size=0), ValueError),
    ],
)
def test_token_chips_rejects_bad_input(kwargs, error):
    with pytest.raises(error):
        viz.token_chips(**kwargs)


def test_heatmap_labels_and_masked_cells():
    scores = torch.tensor([[0.5, float("-inf")], [0.2, 0.8]])
    fig = viz.heatmap(scores, rows=["q1", "q2"], cols=["k1", "k2"], title="scores",
                      xlabel="keys", ylabel="queries", annotate=True)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["k1", "k2"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["q1", "q2"]
    assert title_of(ax) == "scores" and ax.get_xlabel() == "keys"
    image = ax.images[0]
    data = image.get_array()
    assert data.mask[0, 1] and not data.mask[1, 1]  # -inf is drawn as "not there"
    assert np.allclose(image.get_cmap().get_bad()[:3], to_rgb(viz.COLORS["grid"]))
    assert sorted(t.get_text() for t in ax.texts) == ["0.20", "0.50", "0.80"]
    assert len(fig.axes) == 2  # the colour bar


def test_heatmap_explicit_mask_and_role_colour():
    fig = viz.heatmap(np.ones((2, 3)), mask=np.eye(2, 3, dtype=bool), role="enc", colorbar=False)
    image = fig.axes[0].images[0]
    assert image.get_array().mask.sum() == 2
    assert np.allclose(image.get_cmap()(1.0)[:3], to_rgb(viz.COLORS["enc"]))


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(matrix=np.ones(3)),
        dict(matrix=np.ones((2, 2)), rows=["a"]),
        dict(matrix=np.ones((2, 2)), cols=["a", "b", "c"]),
        dict(matrix=np.ones((2, 2)), mask=np.ones((3, 3), dtype=bool)),
        dict(matrix=np.ones((2, 2)), role="nope"),
    ],
)
def test_heatmap_rejects_bad_input(kwargs):
    with pytest.raises(ValueError):
        viz.heatmap(**kwargs)


def test_bars_sorted_labelled_and_coloured():
    fig = viz.bars({"small": 10, "big": 1000, "middle": 100}, colors=["data", "enc", "dec"],
                   title="Where the parameters live")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["small", "middle", "big"]
    faces = [to_hex(p.get_facecolor()) for p in ax.patches]
    assert faces == [to_hex(viz.COLORS[r]) for r in ("data", "dec", "enc")]
    assert {"10", "100", "1,000"} <= {t.get_text() for t in ax.texts}
    assert title_of(ax) == "Where the parameters live"


def test_bars_rejects_bad_input():
    with pytest.raises(TypeError):
        viz.bars([1, 2])
    with pytest.raises(ValueError):
        viz.bars({"a": 1, "b": 2}, colors=["data"])


def test_no_helper_calls_show(monkeypatch):
    monkeypatch.setattr(plt, "show", lambda *a, **k: pytest.fail("plt.show() called"))
    viz.token_chips([["a"]])
    viz.heatmap(np.eye(2))
    viz.bars({"a": 1})


def test_heatmap_cell_lines_only_for_small_matrices():
    small = viz.heatmap(np.eye(4), colorbar=False).axes[0]
    large = viz.heatmap(np.eye(64), colorbar=False).axes[0]
    assert len(small.get_xticks(minor=True)) == 5  # the cell borders
    assert len(large.get_xticks(minor=True)) == 0
    forced = viz.heatmap(np.eye(64), colorbar=False, cell_lines=True).axes[0]
    assert len(forced.get_xticks(minor=True)) == 65
