import hashlib
import json
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import torch


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """The unit tests use tiny models: one thread is faster than two, and immune to a busy
    machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# --- a local HTTP server standing in for the Hugging Face Hub -----------------------------------


class StandInHub(BaseHTTPRequestHandler):
    """Answers what huggingface_hub and transformers ask the Hub for a repository:
    HEAD/GET /[datasets/]<repo>/resolve/<revision>/<file> (with the X-Repo-Commit and ETag
    headers they need), GET /api/{models,datasets}/<repo>[/revision/<rev>] (the file list,
    with sizes: what tfs.hub.file_size reads) and .../tree/... (no sub-folders). Else 404."""

    commit = "1234567890abcdef1234567890abcdef12345678"
    repos: dict = {}  # "owner/name" or "datasets/owner/name" -> {filename: bytes}
    sizes: dict = {}  # the same keys -> {filename: size}, listed whether served or not
    requests: list = []

    def do_HEAD(self):
        self.answer(send_body=False)

    def do_GET(self):
        self.answer(send_body=True)

    def answer(self, send_body):
        path = urlsplit(self.path).path
        self.requests.append(f"{self.command} {path}")
        headers = {"X-Repo-Commit": self.commit}
        body = self.body(path, headers)
        if body is None:
            self.send_response(404)
            self.send_header("X-Error-Code", "EntryNotFound")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if send_body:
            self.wfile.write(body)

    def body(self, path, headers):
        if path == "/":
            return b"a stand-in for the Hub"
        for key, files in self.repos.items():
            kind, repo_id = key.split("/", 1) if key.startswith("datasets/") else ("models", key)
            if path.startswith(f"/{key}/resolve/"):
                name = path.removeprefix(f"/{key}/resolve/").split("/", 1)[-1]
                if name not in files:
                    return None
                headers["ETag"] = '"' + hashlib.sha256(files[name]).hexdigest() + '"'
                return files[name]
            if path.startswith(f"/api/{kind}/{repo_id}/tree/"):
                return b"[]"
            if path.startswith(f"/api/{kind}/{repo_id}"):
                sizes = {name: len(data) for name, data in files.items()}
                sizes.update(self.sizes.get(key, {}))
                siblings = [{"rfilename": name, "size": size} for name, size in sizes.items()]
                answer = {"id": repo_id, "sha": self.commit, "siblings": siblings}
                return json.dumps(answer).encode()
        return None

    def log_message(self, *args):
        pass


@contextmanager
def stand_in_hub(repos, sizes=None):
    """Serve Hub repositories over HTTP on 127.0.0.1; yields the endpoint (for HF_ENDPOINT).

    `repos`: {"owner/name" (a model) or "datasets/owner/name": a folder (its files) or
    {filename: bytes or a path}}; `sizes`: {the same keys: {filename: size}} for files that
    are listed (tfs.hub.file_size) but not served, e.g. a real weights file.
    """
    served = {}
    for key, files in repos.items():
        if not isinstance(files, dict):
            files = {path.name: path for path in Path(files).iterdir() if path.is_file()}
        served[key] = {
            name: data if isinstance(data, bytes) else Path(data).read_bytes()
            for name, data in files.items()
        }
    StandInHub.repos, StandInHub.sizes, StandInHub.requests = served, dict(sizes or {}), []
    server = ThreadingHTTPServer(("127.0.0.1", 0), StandInHub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def tiny_opus_mt_hub(tmp_path_factory):
    """(endpoint, folder): a tiny random Marian, with its tokenizer, served as
    Helsinki-NLP/opus-mt-en-ru (weights as pytorch_model.bin, like the real repository).
    Point HF_ENDPOINT at the endpoint in a fresh process (huggingface_hub reads it once)."""
    pytest.importorskip("transformers")
    from tfs.marian import OPUS_MT_EN_RU, save_tiny_marian

    folder = save_tiny_marian(tmp_path_factory.mktemp("opus-mt-stand-in"), seed=0,
                              weights_file="pytorch_model.bin", eos_bias=0.0)
    with stand_in_hub({OPUS_MT_EN_RU: folder}) as endpoint:
        yield endpoint, folder
