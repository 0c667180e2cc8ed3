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
    """Answers what huggingface_hub and transformers ask the Hub for a model repository:
    HEAD/GET /<repo>/resolve/<revision>/<file> (with the X-Repo-Commit and ETag headers they
    need), GET /api/models/<repo>[/revision/<rev>] (the file list) and .../tree/... (no
    sub-folders). Everything else: 404."""

    commit = "1234567890abcdef1234567890abcdef12345678"
    repos: dict = {}  # repo_id -> {filename: bytes}
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
        for repo_id, files in self.repos.items():
            if path.startswith(f"/{repo_id}/resolve/"):
                name = path.removeprefix(f"/{repo_id}/resolve/").split("/", 1)[-1]
                if name in files:
                    headers["ETag"] = '"' + hashlib.sha256(files[name]).hexdigest() + '"'
                    return files[name]
                return None
            if path.startswith(f"/api/models/{repo_id}/tree/"):
                return b"[]"
            if path.startswith(f"/api/models/{repo_id}"):
                siblings = [{"rfilename": name, "size": len(data)} for name, data in files.items()]
                answer = {"id": repo_id, "sha": self.commit, "siblings": siblings}
                return json.dumps(answer).encode()
        return None

    def log_message(self, *args):
        pass


@contextmanager
def stand_in_hub(folders):
    """Serve {repo_id: folder} over HTTP on 127.0.0.1; yields the endpoint (for HF_ENDPOINT)."""
    StandInHub.repos = {
        repo_id: {path.name: path.read_bytes() for path in Path(folder).iterdir() if path.is_file()}
        for repo_id, folder in folders.items()
    }
    StandInHub.requests = []
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
