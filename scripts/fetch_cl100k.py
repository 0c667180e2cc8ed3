"""Copy OpenAI's cl100k_base rank file (GPT-4's tokenizer) into data/cl100k_base/.

tiktoken downloads cl100k_base.tiktoken from OpenAI's server the first time it is asked
for it. The course needs it offline too (lesson 06 checks its byte-level encoder against
tiktoken), so a copy ships in data/. The copy is taken from PyPI: the `bpe-openai` wheel
(MIT) carries the same file gzipped as bpe_openai/data/cl100k_base.tiktoken.gz. This script
downloads that wheel with pip (the wheel is not a dependency of the course), unzips the
file, checks its sha256 against the `expected_hash` of tiktoken's
tiktoken_ext/openai_public.py (tfs.bpe.CL100K_SHA256) and writes it:

    .venv/bin/python scripts/fetch_cl100k.py              # data/cl100k_base/cl100k_base.tiktoken
    .venv/bin/python scripts/fetch_cl100k.py --out DIR    # into another folder
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from tfs.bpe import CL100K_FILE, CL100K_FOLDER, CL100K_SHA256

ROOT = Path(__file__).resolve().parent.parent

WHEEL = "bpe-openai==0.1.4"
# The wheel is the same file for every CPython >= 3.9 (abi3); any one platform's will do.
PLATFORM = "manylinux2014_x86_64"
MEMBER = "bpe_openai/data/cl100k_base.tiktoken.gz"
OUT_DIR = ROOT / "data" / CL100K_FOLDER


def download_wheel(folder: Path) -> Path:
    subprocess.check_call([
        sys.executable, "-m", "pip", "download", WHEEL, "--no-deps", "--only-binary=:all:",
        "--platform", PLATFORM, "--python-version", "3.12", "--dest", str(folder), "--quiet",
    ])
    (wheel,) = folder.glob("bpe_openai-*.whl")
    return wheel


def rank_file(wheel: Path) -> bytes:
    """The unzipped cl100k_base.tiktoken of the wheel, checked against tiktoken's hash."""
    with zipfile.ZipFile(wheel) as archive:
        contents = gzip.decompress(archive.read(MEMBER))
    digest = hashlib.sha256(contents).hexdigest()
    if digest != CL100K_SHA256:
        raise RuntimeError(f"{MEMBER} of {wheel.name} has sha256 {digest}, "
                           f"not tiktoken's {CL100K_SHA256}")
    return contents


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="the output folder")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        contents = rank_file(download_wheel(Path(tmp)))
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / CL100K_FILE
    path.write_bytes(contents)
    print(f"{path}: {len(contents):,} bytes, sha256 {CL100K_SHA256[:16]}... (tiktoken's)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
