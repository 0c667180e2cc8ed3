"""`make lab`: a real JupyterLab server, headless, started as scripts/lab.py starts it.

The server listens on 127.0.0.1 only, on a free port, behind a random token; its
Jupyter folders are temporary, so nothing of the user's configuration leaks in
and nothing is left behind. Every wait is bounded, and the server and its kernels
are killed whatever happens.
"""

import importlib.util
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import psutil
import pytest
import requests
import websocket

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "lab.py"
spec = importlib.util.spec_from_file_location("lab", SCRIPT)
lab = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lab)

START_TIMEOUT = 45  # seconds for the server to answer (a busy 2-core CI machine)
RUN_TIMEOUT = 45  # seconds for the kernel to start and run one cell (it imports torch)
LESSONS = sorted(path.name for path in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def kill_tree(process: subprocess.Popen) -> None:
    """Kill a process and everything it started (its kernels), on every platform."""
    try:
        family = psutil.Process(process.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        family = []
    for member in [*family, psutil.Process(process.pid)] if process.poll() is None else family:
        try:
            member.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(family, timeout=10)
    process.wait(timeout=10)


class Server:
    """A running server: its base URL, token and log, and helpers for its REST API."""

    def __init__(self, url, token, log):
        self.url, self.token, self.log = url, token, log
        self.http = requests.Session()
        self.http.headers["Authorization"] = f"token {token}"

    def get(self, path, **options):
        return self.http.get(self.url + path, timeout=10, **options)

    def post(self, path, body=None):
        return self.http.post(self.url + path, json=body, timeout=RUN_TIMEOUT)

    def delete(self, path):
        return self.http.delete(self.url + path, timeout=RUN_TIMEOUT)


@pytest.fixture
def server(tmp_path, monkeypatch):
    """JupyterLab as `make lab` starts it, with the course's kernel registered in tmp_path."""
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "prefix" / "share" / "jupyter"))
    spec_folder = lab.register_kernel(prefix=tmp_path / "prefix")
    settings = lab.write_lab_settings(prefix=tmp_path / "prefix")
    port, token = free_port(), secrets.token_hex(16)
    environment = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTER_DATA_DIR": str(tmp_path / "data"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "IPYTHONDIR": str(tmp_path / "ipython"),
        "JUPYTER_PLATFORM_DIRS": "1",
    }
    command = [
        *lab.lab_command(ROOT),
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        "--LabApp.news_url=",  # no network: no news, no update check
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        f"--LabApp.app_settings_dir={settings.parent.parent}",  # the environment's, here tmp
    ]
    log_path = tmp_path / "server.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(command, env=environment, stdout=log, stderr=log, cwd=tmp_path)
    try:
        running = Server(f"http://127.0.0.1:{port}", token, log_path)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if process.poll() is not None:
                pytest.fail(f"the server exited ({process.returncode}):\n{read(log_path)}")
            try:
                if running.get("/api/status").status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"no answer in {START_TIMEOUT} s:\n{read(log_path)}")
            time.sleep(0.5)
        running.process, running.spec_folder = process, spec_folder
        yield running
    finally:
        kill_tree(process)


def run_in_kernel(server, kernel_id, code):
    """Run code in a kernel through the server's websocket; return its stdout."""
    ws_url = server.url.replace("http", "ws", 1) + f"/api/kernels/{kernel_id}/channels"
    channel = websocket.create_connection(
        ws_url, header=[f"Authorization: token {server.token}"], timeout=RUN_TIMEOUT
    )
    try:
        msg_id, session = uuid.uuid4().hex, uuid.uuid4().hex
        header = {"msg_id": msg_id, "session": session, "username": "test",
                  "msg_type": "execute_request", "version": "5.3"}
        content = {"code": code, "silent": False, "store_history": False,
                   "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}
        channel.send(json.dumps({"header": header, "parent_header": {}, "metadata": {},
                                 "content": content, "channel": "shell", "buffers": []}))
        stdout, deadline = [], time.monotonic() + RUN_TIMEOUT
        while time.monotonic() < deadline:
            message = json.loads(channel.recv())
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind = message["msg_type"]
            if kind == "stream" and message["content"]["name"] == "stdout":
                stdout.append(message["content"]["text"])
            elif kind == "error":
                pytest.fail("the cell failed: " + "\n".join(message["content"]["traceback"]))
            elif kind == "status" and message["content"]["execution_state"] == "idle":
                return "".join(stdout)
        pytest.fail(f"the kernel did not finish in {RUN_TIMEOUT} s")
    finally:
        channel.close()


def test_lab_lists_the_lessons_and_runs_them_with_the_course_kernel(server):
    # The lessons are listed, as the file browser shows them.
    listing = server.get("/api/contents/notebooks")
    assert listing.status_code == 200
    names = sorted(item["name"] for item in listing.json()["content"] if item["type"] == "notebook")
    assert LESSONS and set(LESSONS) <= set(names)
    # The browser opens on the lessons' folder.
    landing = server.get("/", allow_redirects=False)
    assert urlsplit(landing.headers["Location"]).path == lab.OPEN_AT
    # The course's kernel is the only one offered, and the default.
    specs = server.get("/api/kernelspecs").json()
    assert specs["default"] == lab.KERNEL_NAME
    assert list(specs["kernelspecs"]) == [lab.KERNEL_NAME]
    assert specs["kernelspecs"][lab.KERNEL_NAME]["spec"]["display_name"] == lab.DISPLAY_NAME

    # JupyterLab starts that kernel for a lesson without asking (setting from scripts/lab.py).
    tracker = server.get("/lab/api/settings/@jupyterlab/notebook-extension:tracker").json()
    assert tracker["schema"]["properties"]["autoStartDefaultKernel"]["default"] is True

    # Open lesson 00 as JupyterLab does (a session), with the default kernel.
    opened = server.post("/api/sessions", {"path": f"notebooks/{LESSONS[0]}", "type": "notebook",
                                           "name": LESSONS[0], "kernel": {}})
    assert opened.status_code == 201, opened.text
    session = opened.json()
    assert session["kernel"]["name"] == lab.KERNEL_NAME
    printed = run_in_kernel(
        server, session["kernel"]["id"],
        "import os, sys, tfs\nprint(tfs.__file__, sys.executable, os.getcwd(), os.getpid(),"
        " sep='\\n')",
    )
    tfs_file, executable, cwd, pid = printed.split("\n")[:4]
    assert Path(tfs_file).resolve() == ROOT / "tfs" / "__init__.py"  # this checkout's tfs
    assert Path(executable).resolve() == Path(sys.executable).resolve()  # the course's Python
    assert Path(cwd).resolve() == ROOT / "notebooks"  # where the lesson lies
    kernel = psutil.Process(int(pid))

    # Shut down: the kernel first, as closing the lesson does, then the server.
    assert server.delete(f"/api/sessions/{session['id']}").status_code == 204
    kernel.wait(timeout=RUN_TIMEOUT)
    assert server.get("/api/kernels").json() == []
    server.post("/api/shutdown")
    assert server.process.wait(timeout=RUN_TIMEOUT) is not None
