"""The course's diagrams: tfs.viz.seq2seq_diagram and tfs.viz.architecture."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from tfs import viz  # noqa: E402


@pytest.fixture(autouse=True)
def course_style(monkeypatch):
    viz.use_course_style(retina=False)

    def no_show(*args, **kwargs):
        raise AssertionError("a diagram must not call plt.show()")

    monkeypatch.setattr(plt, "show", no_show)
    yield
    plt.close("all")


def texts(fig):
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def patches(fig, gid):
    return [p for ax in fig.axes for p in ax.patches if p.get_gid() == gid]


def face(patch):
    return to_hex(patch.get_facecolor(), keep_alpha=False)


def edge(patch):
    return to_hex(patch.get_edgecolor(), keep_alpha=False)


def strong_fill(role):
    return to_hex(viz.tint(viz.COLORS[role], 0.85))


def faded_fill(role):
    return to_hex(viz.tint(viz.COLORS[role], 0.08))


def assert_readable(fig):
    """Every text inside the figure, and no two texts overlapping."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    page = fig.bbox
    boxes = []
    for ax in fig.axes:
        for text in ax.texts:
            if not text.get_text().strip():
                continue
            box = text.get_window_extent(renderer)
            assert page.x0 - 1 <= box.x0 and box.x1 <= page.x1 + 1, f"{text.get_text()!r} clipped"
            assert page.y0 - 1 <= box.y0 and box.y1 <= page.y1 + 1, f"{text.get_text()!r} clipped"
            boxes.append((text.get_text(), box))
    for i, (first, a) in enumerate(boxes):
        for second, b in boxes[i + 1:]:
            overlap = min(a.x1, b.x1) - max(a.x0, b.x0), min(a.y1, b.y1) - max(a.y0, b.y0)
            assert min(overlap) <= 0.5, f"{first!r} overlaps {second!r}"


# --- seq2seq_diagram ---------------------------------------------------------------------------

SOURCE, TARGET = ["Я", "видел", "кота"], ["I", "saw", "a", "cat"]


def test_bottleneck_draws_one_cell_per_token_and_one_vector():
    fig = viz.seq2seq_diagram(SOURCE, TARGET)
    assert isinstance(fig, Figure)
    assert len(patches(fig, "encoder_cell")) == 3
    assert len(patches(fig, "decoder_cell")) == 4
    assert len(patches(fig, "source_token")) == 3 and len(patches(fig, "target_token")) == 4
    assert patches(fig, "bottleneck") and not patches(fig, "attention")
    words = texts(fig)
    assert set(SOURCE + TARGET) <= set(words)
    assert "<s>" in words and "one vector" in words
    assert any("one vector" in w for w in words if len(w) > 20)  # the default title


def test_seq2seq_colours_follow_the_roles():
    fig = viz.seq2seq_diagram(SOURCE, TARGET, variant="attention")
    assert {face(p) for p in patches(fig, "encoder_cell")} == {strong_fill("enc")}
    assert {face(p) for p in patches(fig, "decoder_cell")} == {strong_fill("dec")}
    assert {face(p) for p in patches(fig, "source_token")} == {strong_fill("data")}
    assert face(patches(fig, "attention")[0]) == strong_fill("att")
    assert {edge(p) for p in patches(fig, "attention_weight")} == {viz.COLORS["att"].lower()}


def test_attention_lines_are_as_wide_as_their_weights():
    weights = [0.1, 0.7, 0.2]
    fig = viz.seq2seq_diagram(SOURCE, TARGET, variant="attention", focus=3, weights=weights)
    lines = patches(fig, "attention_weight")
    assert len(lines) == 3 and not patches(fig, "bottleneck")
    widths = [line.get_linewidth() for line in lines]
    assert np.argsort(widths).tolist() == np.argsort(weights).tolist()
    words = texts(fig)
    assert "0.70" in words and "attention, step 4" in words


def test_attention_weights_are_normalised():
    fig = viz.seq2seq_diagram(SOURCE, TARGET, variant="attention", weights=[1, 1, 2])
    assert {"0.25", "0.50"} <= set(texts(fig))


def test_context_goes_into_the_cell_or_into_the_output_layer():
    into_cell = viz.seq2seq_diagram(SOURCE, TARGET, variant="attention", focus=1)
    assert patches(into_cell, "context_into_cell") and not patches(into_cell, "context_into_output")
    into_output = viz.seq2seq_diagram(SOURCE, TARGET, variant="attention", focus=1,
                                      context="output")
    assert patches(into_output, "context_into_output")
    assert not patches(into_output, "context_into_cell")
    arrow = patches(into_output, "context_into_output")[0]
    (x_start, y_start), (x_end, y_end) = arrow._posA_posB  # where it starts and ends (data)
    cells = patches(into_output, "decoder_cell")
    cell_top = cells[1].get_y() + cells[1].get_height()
    tokens = sorted(patches(into_output, "target_token"), key=lambda p: p.get_x())
    assert y_start == y_end and cell_top < y_end < tokens[1].get_y()  # between h_2 and its token
    assert any("output layer" in w for w in texts(into_output))
    assert_readable(into_output)


@pytest.mark.parametrize("variant", ["bottleneck", "attention"])
def test_seq2seq_is_readable(variant):
    assert_readable(viz.seq2seq_diagram(variant=variant))
    assert_readable(viz.seq2seq_diagram(["a"], ["b"], variant=variant, title="short"))


@pytest.mark.parametrize(
    "kwargs, error",
    [
        (dict(source="a b c"), TypeError),
        (dict(source=[]), ValueError),
        (dict(target=["ok", 3]), TypeError),
        (dict(target=["x"] * 17), ValueError),
        (dict(variant="transformer"), ValueError),
        (dict(focus=1), ValueError),  # focus belongs to the attention variant
        (dict(variant="attention", focus=4), ValueError),
        (dict(variant="attention", focus=True), TypeError),
        (dict(context="output"), ValueError),  # context belongs to the attention variant
        (dict(variant="attention", context="encoder"), ValueError),
        (dict(variant="attention", weights=[0.5, 0.5]), ValueError),
        (dict(variant="attention", weights=[1.0, -1.0, 1.0]), ValueError),
        (dict(variant="attention", weights=[0.0, 0.0, 0.0]), ValueError),
        (dict(variant="attention", weights=[1.0, np.nan, 1.0]), ValueError),
        (dict(title=3), TypeError),
    ],
)
def test_seq2seq_rejects_bad_input(kwargs, error):
    arguments = dict(source=SOURCE, target=TARGET) | kwargs
    with pytest.raises(error):
        viz.seq2seq_diagram(**arguments)


# --- architecture ------------------------------------------------------------------------------


def test_architecture_has_every_block_of_the_original():
    fig = viz.architecture()
    words = " | ".join(texts(fig))
    for label in ("Self-attention", "Masked self-attention", "Cross-attention", "Feed-forward",
                  "Add & Norm", "Embedding E", "Positional encoding", "Linear Eᵀ (tied)",
                  "Softmax", "6 ×", "encoder output (memory)", "p(next token)", "same E"):
        assert label in words, label
    assert len(patches(fig, "norm")) == 2 + 3  # encoder: 2 Add & Norm, decoder: 3
    assert len(patches(fig, "embedding")) == 2
    assert patches(fig, "encoder_frame") and patches(fig, "decoder_frame")
    assert [line.get_gid() for line in fig.axes[0].lines].count("tie") == 1


def test_architecture_colours_follow_the_roles():
    fig = viz.architecture()
    assert edge(patches(fig, "encoder_frame")[0]) == viz.COLORS["enc"].lower()
    assert edge(patches(fig, "decoder_frame")[0]) == viz.COLORS["dec"].lower()
    for part in ("self_attention", "masked_attention", "cross_attention"):
        assert face(patches(fig, part)[0]) == strong_fill("att"), part
    assert {face(p) for p in patches(fig, "embedding")} == {strong_fill("data")}
    assert sorted(face(p) for p in patches(fig, "ffn")) == sorted(
        [strong_fill("enc"), strong_fill("dec")])


def test_n_layers_is_written_next_to_each_stack():
    assert sum(w == "12 ×" for w in texts(viz.architecture(n_layers=12))) == 2
    assert sum(w == "N ×" for w in texts(viz.architecture(n_layers=None))) == 2


def test_highlight_fades_everything_else():
    fig = viz.architecture(highlight="cross_attention")
    assert face(patches(fig, "cross_attention")[0]) == strong_fill("att")
    assert face(patches(fig, "self_attention")[0]) == faded_fill("att")
    assert {face(p) for p in patches(fig, "embedding")} == {faded_fill("data")}
    both = viz.architecture(highlight=["encoder", "embedding"])
    assert face(patches(both, "self_attention")[0]) == strong_fill("att")  # inside the encoder
    assert face(patches(both, "masked_attention")[0]) == faded_fill("att")
    assert {face(p) for p in patches(both, "embedding")} == {strong_fill("data")}


def test_kinds_and_norm_positions():
    gpt = viz.architecture(kind="decoder-only", norm="pre", n_layers=12)
    words = texts(gpt)
    assert "Cross-attention" not in words and "Final Norm" in words
    assert not patches(gpt, "encoder_frame") and patches(gpt, "decoder_frame")
    assert not patches(gpt, "self_attention") and len(patches(gpt, "masked_attention")) == 1
    bert = viz.architecture(kind="encoder-only", tied=False)
    assert not patches(bert, "decoder_frame") and "Linear W_out" in texts(bert)
    assert "same E" not in texts(bert)


def test_a_shared_vocabulary_ties_the_encoders_embedding_too():
    def lines(fig, gid):
        return [line for line in fig.axes[0].lines if line.get_gid() == gid]

    one = viz.architecture()
    assert len(lines(one, "tie")) == 1 and not lines(one, "shared_embedding")
    assert texts(one).count("same E") == 1
    shared = viz.architecture(shared_vocab=True, d_model=512, n_heads=8, d_ff=2048)
    assert len(lines(shared, "shared_embedding")) == 1 and texts(shared).count("same E") == 2
    assert_readable(shared)
    assert not lines(viz.architecture(shared_vocab=True, tied=False), "shared_embedding")


def test_sizes_are_written_on_the_blocks():
    fig = viz.architecture(d_model=512, n_heads=8, d_ff=2048, vocab_size=62518)
    words = " | ".join(texts(fig))
    assert "62,518 × 512" in words and "512 → 2,048 → 512" in words
    assert "8 heads × 64" in words and "512 → 62,518" in words


@pytest.mark.parametrize("kind", viz.ARCHITECTURE_KINDS)
@pytest.mark.parametrize("norm", ["post", "pre"])
def test_architecture_is_readable(kind, norm):
    assert_readable(viz.architecture(kind=kind, norm=norm, d_model=512, n_heads=8, d_ff=2048,
                                     vocab_size=62518))


@pytest.mark.parametrize(
    "kwargs, error",
    [
        (dict(n_layers=0), ValueError),
        (dict(n_layers=2.5), TypeError),
        (dict(n_layers=True), TypeError),
        (dict(highlight="attention"), ValueError),
        (dict(highlight=[]), ValueError),
        (dict(highlight=3), TypeError),
        (dict(kind="gpt"), ValueError),
        (dict(norm="middle"), ValueError),
        (dict(tied="yes"), TypeError),
        (dict(shared_vocab=1), TypeError),
        (dict(d_model=-512), ValueError),
        (dict(vocab_size="50k"), TypeError),
        (dict(title=["a"]), TypeError),
    ],
)
def test_architecture_rejects_bad_input(kwargs, error):
    with pytest.raises(error):
        viz.architecture(**kwargs)
