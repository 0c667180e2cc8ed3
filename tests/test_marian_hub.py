"""tfs.marian online: opus-mt-en-ru downloaded through tfs.hub, converted, and translating as
MarianMTModel.generate does, with a local HTTP server (tests/conftest.py, `tiny_opus_mt_hub`)
standing in for the Hub and a tiny random Marian in place of the real weights.

Separate from tests/test_marian.py because it starts a fresh interpreter (huggingface_hub
reads HF_ENDPOINT once, at import): about 10-20 s.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("transformers")


STAND_IN = """
    import json
    import torch
    from transformers import MarianMTModel, MarianTokenizer
    from tfs.marian import OPUS_MT_EN_RU, download_marian, from_marian, translate
    folder = download_marian()  # tfs.hub.hf_hub_download: config.json and pytorch_model.bin
    ours = from_marian(folder)
    theirs = MarianMTModel.from_pretrained(folder).eval()  # the same files, no new download
    tokenizer = MarianTokenizer.from_pretrained(OPUS_MT_EN_RU)
    sentences = ["I see the cat.", "Where is the bus stop?"]
    batch = tokenizer(sentences, return_tensors="pt", padding=True)
    with torch.no_grad():
        expected = theirs.generate(**batch, num_beams=4, max_new_tokens=12)
    print(json.dumps({"ours": translate(ours, tokenizer, sentences, max_len=12),
                      "theirs": tokenizer.batch_decode(expected, skip_special_tokens=True)}))
"""


def test_opus_mt_from_a_stand_in_hub_translates_as_generate_does(tiny_opus_mt_hub, tmp_path):
    """Online path, with a local server in place of the Hub: download, convert, translate."""
    endpoint, _ = tiny_opus_mt_hub
    unset = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_ENDPOINT", "HF_HUB_CACHE")
    env = {name: value for name, value in os.environ.items() if name not in unset}
    env.update(HF_ENDPOINT=endpoint, HF_HUB_CACHE=str(tmp_path / "cache"),
               HF_HOME=str(tmp_path / "home"), HF_HUB_DISABLE_PROGRESS_BARS="1",
               OMP_NUM_THREADS="1", PYTHONPATH=str(Path(__file__).resolve().parent.parent),
               PYTHONWARNINGS="ignore")
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(STAND_IN)], env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "Hub files: downloaded from the Hugging Face Hub"  # tfs.hub went online
    translations = json.loads(lines[-1])
    assert translations["ours"] == translations["theirs"]
    assert all(translations["ours"])  # not empty: the tiny model writes until max_len
