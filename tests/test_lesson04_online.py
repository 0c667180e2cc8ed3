"""Lesson 04 online, without the internet: a local HTTP server stands in for the Hub.

The stored lesson is the offline run (the real weights are not shipped). This test runs the
whole lesson in a fresh kernel with HF_ENDPOINT pointing at the stand-in server, which serves
every Hub file the lesson asks for: the copies of the four configs, the course's tokenizer
and validation pairs, the recorded size of opus-mt-en-ru's weights, and a tiny random Marian
with its tokenizer in place of opus-mt-en-ru's weights (the `MARIAN_REPO` parameter), so that
the online branch of section 7 (download, convert, compare with MarianMTModel.generate) runs
instead of the offline one (the course's exported translator, data/tfs_translator_en_ru).
The lesson's own asserts are the checks; this test only asserts that they ran online.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import stand_in_hub

ROOT = Path(__file__).resolve().parent.parent
LESSON = ROOT / "notebooks" / "04_real_model_blueprints.ipynb"
SNAPSHOT = "0" * 40
CONFIG_REPOS = ("openai-community/gpt2", "Helsinki-NLP/opus-mt-en-ru",
                "unsloth/Meta-Llama-3.1-8B", "deepseek-ai/DeepSeek-V3")
STAND_IN = "tfs-stand-in/tiny-marian"  # the tiny model's repository on the stand-in Hub
OPUS_WEIGHTS_BYTES = 306_991_893

RUN = """
import sys
import papermill

papermill.execute_notebook(
    sys.argv[1], sys.argv[2], parameters={"MARIAN_REPO": sys.argv[3]}, cwd=sys.argv[4],
    kernel_name="python3", progress_bar=False, execution_timeout=600,
    extra_arguments=["--IPKernelApp.log_level=ERROR"],
)
"""


def shipped_config(repo_id):
    folder = ROOT / "data" / "hub" / f"models--{repo_id.replace('/', '--')}"
    return folder / "snapshots" / SNAPSHOT / "config.json"


def outputs(notebook):
    """Every cell's printed text, in order."""
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            if output["output_type"] == "stream":
                yield "".join(output["text"])
            elif output["output_type"] == "error":
                yield f"ERROR {output['ename']}: {output['evalue']}"


def test_lesson_04_runs_online_against_a_stand_in_hub(tmp_path):
    pytest.importorskip("papermill")
    pytest.importorskip("sentencepiece")
    from tfs.marian import save_tiny_marian

    tiny = save_tiny_marian(tmp_path / "tiny-marian", seed=0, weights_file="pytorch_model.bin",
                            eos_bias=0.0)
    repos = {repo_id: {"config.json": shipped_config(repo_id)} for repo_id in CONFIG_REPOS}
    repos["xmarva/tfs-bpe-en-ru-16k"] = {"tokenizer.json": ROOT / "data/corpus/tokenizer.json"}
    repos["datasets/xmarva/tfs-tatoeba-en-ru"] = {
        "data/validation.parquet": ROOT / "data/corpus/validation.parquet",
        "data/train.parquet": ROOT / "data/corpus/train.parquet",
    }
    repos[STAND_IN] = tiny
    sizes = {"Helsinki-NLP/opus-mt-en-ru": {"pytorch_model.bin": OPUS_WEIGHTS_BYTES}}

    unset = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_ENDPOINT", "HF_HUB_CACHE", "HF_HOME",
             "TFS_DATA_DIR", "TFS_WORK_DIR")
    environment = {name: value for name, value in os.environ.items() if name not in unset}
    executed = tmp_path / "04_online.ipynb"
    with stand_in_hub(repos, sizes=sizes) as endpoint:
        environment.update(
            HF_ENDPOINT=endpoint, HF_HUB_CACHE=str(tmp_path / "hub-cache"),
            HF_HOME=str(tmp_path / "hf-home"), TFS_WORK_DIR=str(tmp_path / "work"),
            TFS_QUIET="1", HF_HUB_DISABLE_PROGRESS_BARS="1", PYDEVD_DISABLE_FILE_VALIDATION="1",
            OMP_NUM_THREADS="1",  # as conftest's one_thread: immune to a busy machine
        )
        result = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(RUN), str(LESSON), str(executed), STAND_IN,
             str(LESSON.parent)],
            env=environment, capture_output=True, text=True, timeout=900,
        )
        from conftest import StandInHub

        requests = list(StandInHub.requests)
    assert result.returncode == 0, result.stderr[-3000:]  # every cell ran, every assert held

    printed = "\n".join(outputs(json.loads(executed.read_text(encoding="utf-8"))))
    assert "Hub files: downloaded from the Hugging Face Hub" in printed
    assert "offline" not in printed, printed  # no stand-in line: the online branch ran
    assert f"downloaded {STAND_IN}'s weights from the Hub" in printed
    assert "sentences translated into identical token ids: 5 of 5" in printed
    assert f"GET /{STAND_IN}/resolve/main/pytorch_model.bin" in requests
    assert "GET /Helsinki-NLP/opus-mt-en-ru/resolve/main/config.json" in requests
    assert "course's own translator" not in printed  # the offline stand-in was not used
