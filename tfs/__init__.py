"""tfs: the small helper package of the course "Transformers from scratch".

Lessons teach by writing code inline; `tfs` keeps what several lessons reuse:

- `tfs.env`: where the notebook runs, seeding, quiet outputs, a working folder;
- `tfs.viz`: the course's colours, tables, token chips, heatmaps, bar charts and the
  architecture diagrams (`seq2seq_diagram`, `architecture`);
- `tfs.costs`: FLOPs counted by PyTorch's own counter;
- `tfs.hub`: Hub files and the course's corpus and tokenizer, online or offline;
- `tfs.model`: the course's Transformer (lessons 02-03), one source of truth;
- `tfs.decoding`: greedy decoding and beam search, with a KV cache.
"""

__version__ = "0.1.0"

#: The course's repository on GitHub ("owner/name"). Badges and the install
#: line of every lesson are built from this one constant (tests check them).
REPO = "xmarva/transformers-from-scratch"
BRANCH = "main"
#: What a lesson's set-up cell installs when `tfs` is missing (Colab, Kaggle).
INSTALL_URL = f"git+https://github.com/{REPO}@{BRANCH}"


def badges(notebook: str) -> str:
    """Markdown for the "Open in Colab" and "Open in Kaggle" badges of a lesson.

    `notebook` is the lesson's file name, e.g. "02_building_blocks.ipynb".
    """
    if not isinstance(notebook, str) or not notebook.endswith(".ipynb") or "/" in notebook:
        raise ValueError(f"expected a notebook file name like '02_x.ipynb', got {notebook!r}")
    github = f"github.com/{REPO}/blob/{BRANCH}/notebooks/{notebook}"
    colab = f"https://colab.research.google.com/{github.replace('github.com', 'github', 1)}"
    kaggle = f"https://kaggle.com/kernels/welcome?src=https://{github}"
    return (
        f"[![Open in Colab](https://colab.research.google.com/assets/colab-badge.svg)]({colab}) "
        f"[![Open in Kaggle](https://kaggle.com/static/images/open-in-kaggle.svg)]({kaggle})"
    )
