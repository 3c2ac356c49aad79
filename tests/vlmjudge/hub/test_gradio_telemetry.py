"""Issue 50, item 11: the apps send Gradio no analytics and ask it for no version check unless the user
sets GRADIO_ANALYTICS_ENABLED. `vlmjudge annotate` and a scoring Space app are run as a user runs
them, with every connection off loopback recorded and refused; the same run with the variable set
to True records Gradio's calls, so the guard is shown to see them."""
from __future__ import annotations

import os
import sys
import textwrap
import time
from pathlib import Path

import pytest
from PIL import Image

from vlmjudge.hub.gradio_setup import ANALYTICS_VARIABLE, import_gradio
from vlmjudge.testing.processes import free_port, running_server

TOY_DIR = Path(__file__).resolve().parents[1]  # tests/vlmjudge, where toy_method lives

#: Runs `-m MODULE ARGS` or `FILE.py ARGS` with each off-loopback lookup or connection written to
#: $GUARD_LOG and refused, as a machine without a network would refuse it.
GUARD = textwrap.dedent('''
    import ipaddress, os, runpy, socket, sys

    LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}

    def off_loopback(host):
        host = host.decode() if isinstance(host, bytes) else str(host)
        try:
            return None if ipaddress.ip_address(host.split("%")[0]).is_loopback else host
        except ValueError:
            return None if host in LOOPBACK_NAMES else host

    def refuse(host):
        with open(os.environ["GUARD_LOG"], "a") as log:
            log.write(host + "\\n")
        raise OSError(f"the test allows loopback only, not {host}")

    real_getaddrinfo = socket.getaddrinfo
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex

    def getaddrinfo(host, *args, **kwargs):
        if host is not None and off_loopback(host):
            refuse(off_loopback(host))
        return real_getaddrinfo(host, *args, **kwargs)

    def guarded(real):
        def connect(self, address):
            if self.family in (socket.AF_INET, socket.AF_INET6) and off_loopback(address[0]):
                refuse(off_loopback(address[0]))
            return real(self, address)
        return connect

    socket.getaddrinfo = getaddrinfo
    socket.socket.connect, socket.socket.connect_ex = guarded(real_connect), guarded(real_connect_ex)
    if sys.argv[1] == "-m":
        sys.argv = sys.argv[2:]
        runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
    else:
        sys.argv = sys.argv[1:]
        runpy.run_path(sys.argv[0], run_name="__main__")
''')

TOY_APP = textwrap.dedent('''
    from vlmjudge.hub.app import app_from_env
    import toy_method

    app_from_env(toy_method.SPEC).launch()
''')


def guarded_run(tmp_path: Path, argv: list[str], port: int, **env: str) -> list[str]:
    """Serve `argv` under the guard until its page answers, give Gradio's start-up threads time to
    call out, stop it; the off-loopback hosts it tried. Offline switches are cleared, as a user has
    them: only the guard stands between the app and the network."""
    guard, log = tmp_path / "guard.py", tmp_path / f"attempts-{port}.log"
    guard.write_text(GUARD)
    log.touch()
    cleared = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY",
               "DO_NOT_TRACK", ANALYTICS_VARIABLE)
    full_env = {key: value for key, value in os.environ.items() if key not in cleared}
    full_env.update(GUARD_LOG=str(log), PYTHONPATH=os.pathsep.join([str(TOY_DIR), os.environ.get("PYTHONPATH", "")]),
                    GRADIO_SERVER_PORT=str(port), **env)
    with running_server([sys.executable, str(guard), *argv], f"http://127.0.0.1:{port}/", tmp_path / "server.log",
                        timeout_s=180, env=full_env, poll_s=0.5, stop_s=20):
        time.sleep(3)  # the version check and the launch analytics run in threads of their own
    return log.read_text().split()


def annotate_argv(tmp_path: Path) -> list[str]:
    """`vlmjudge annotate terravis` over one image, as the console script runs it."""
    (tmp_path / "images").mkdir(exist_ok=True)
    Image.new("RGB", (16, 16), (10, 200, 90)).save(tmp_path / "images" / "a.png")
    return ["-m", "vlmjudge.cli", "annotate", "terravis", "--images", str(tmp_path / "images"),
            "--out", str(tmp_path / "labels.jsonl")]


def test_import_gradio_turns_analytics_off_unless_the_user_chose(monkeypatch):
    monkeypatch.delenv(ANALYTICS_VARIABLE, raising=False)
    gr = import_gradio()
    assert os.environ[ANALYTICS_VARIABLE] == "False"
    assert gr.analytics.analytics_enabled() is False
    monkeypatch.setenv(ANALYTICS_VARIABLE, "True")
    import_gradio()
    assert os.environ[ANALYTICS_VARIABLE] == "True"  # the user's choice stands


def test_the_annotation_app_is_made_with_analytics_off(tmp_path, monkeypatch):
    from vlmjudge.hub.annotate import annotation_app

    monkeypatch.delenv(ANALYTICS_VARIABLE, raising=False)
    (tmp_path / "images").mkdir()
    Image.new("RGB", (16, 16)).save(tmp_path / "images" / "a.png")
    app = annotation_app("terravis", tmp_path / "images", tmp_path / "labels.jsonl")
    assert app.analytics_enabled is False and app.get_config_file()["analytics_enabled"] is False


@pytest.mark.timeout(600)
def test_annotate_and_a_space_app_call_no_one_off_loopback(tmp_path):
    pytest.importorskip("gradio")
    assert guarded_run(tmp_path, annotate_argv(tmp_path), free_port()) == []
    app = tmp_path / "app.py"
    app.write_text(TOY_APP)
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"meta": {"item_id": 0}, "probs": {"Yes": 0.9, "No": 0.1}}\n')
    assert guarded_run(tmp_path, [str(app)], free_port(), VLMJUDGE_MODEL=str(answers), VLMJUDGE_BACKEND="replay",
                       VLMJUDGE_KEY_FIELDS="item_id") == []


@pytest.mark.timeout(600)
def test_the_guard_sees_gradio_call_out_when_the_user_turns_analytics_on(tmp_path):
    pytest.importorskip("gradio")
    attempts = guarded_run(tmp_path, annotate_argv(tmp_path), free_port(), **{ANALYTICS_VARIABLE: "True"})
    assert "api.gradio.app" in attempts, attempts  # the version check and analytics, refused by the guard
