"""tfs: the small helper package of the course "Transformers from scratch".

Lessons teach by writing code inline; `tfs` keeps what several lessons reuse:

- `tfs.env`: where the notebook runs, seeding, quiet outputs, a working folder;
- `tfs.viz`: the course's colours, tables, token chips, heatmaps, bar charts and the
  architecture diagrams (`seq2seq_diagram`, `architecture`);
- `tfs.costs`: FLOPs counted by PyTorch's own counter;
- `tfs.hub`: Hub files, online or offline (the course's own data stands in, and says so);
- `tfs.data`: the generated English-Russian corpus of lesson 05 and its tokenizer;
- `tfs.model`: the course's Transformer (lessons 02-03), one source of truth, with the
  `Variant` settings that make it a Marian translator, and lesson 07's switches (pre-LN,
  RMSNorm, SwiGLU, rotary positions, grouped-query attention, experts) and `DecoderOnly`;
- `tfs.llama`: Llama-architecture models (`LlamaForCausalLM`) converted into `tfs.model`;
- `tfs.decoding`: greedy decoding and beam search (Hugging Face's beam algorithm); the KV
  cache belongs to the model's attention;
- `tfs.marian`: Hugging Face's Marian translators (opus-mt-*) converted into `tfs.model`;
- `tfs.rnn`: lesson 00's GRU translator with attention (lesson 05's baseline);
- `tfs.train`: the training loop of lessons 03-05 (length batches, label smoothing, warm-up,
  clipping, checkpoints, mixed precision, DDP);
- `tfs.bpe`: byte-pair encoding written out (lesson 06): the trainer (equal to the `tokenizers`
  library's), a byte-level trainer, the encoder and decoder, cl100k_base, and the course
  tokenizers' one recipe;
- `tfs.exercises`: the checkers of every lesson's exercises and bug clinics.
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
