"""`vlmjudge serve` builds the engine's command (vLLM's OpenAI server, or SGLang's) with the settings
the methods need, prints it, or becomes the engine; without the engine it says how to install it.
A real start through this launcher: tests/vlmjudge/backends/test_vllm_openai_server.py."""
import json
import shlex

import pytest

from vlmjudge.backends.vllm_first_options import FIRST_OPTIONS_PROCESSOR
from vlmjudge.cli import main as vlmjudge_main
from vlmjudge.serve import cli as serve_cli
from vlmjudge.serve.engine import ServeOptions, engine_argv, engine_env


def _flag(argv, name):
    return argv[argv.index(name) + 1]


def test_the_vllm_command_carries_the_methods_settings():
    argv = engine_argv(ServeOptions("org/judge", dtype="float32", served_model_name="judge",
                                    extra=("--max-model-len", "4096")), "/env/python")
    assert argv[:3] == ["/env/python", "-m", "vllm.entrypoints.openai.api_server"]  # not the `vllm` script
    assert _flag(argv, "--model") == "org/judge" and _flag(argv, "--host") == "127.0.0.1"
    assert "--enable-prefix-caching" in argv and _flag(argv, "--max-logprobs") == "-1"
    assert json.loads(_flag(argv, "--structured-outputs-config")) == {"backend": "xgrammar",
                                                                       "disable_any_whitespace": True}
    assert _flag(argv, "--dtype") == "float32" and _flag(argv, "--served-model-name") == "judge"
    assert _flag(argv, "--logits-processors") == FIRST_OPTIONS_PROCESSOR  # first_options, enforced server-side
    assert argv[-2:] == ["--max-model-len", "4096"]  # the engine's own flags, last, as given


def test_the_sglang_command_names_sglang_s_flags():
    argv = engine_argv(ServeOptions("org/judge", engine="sglang", port=30000), "python")
    assert argv[:3] == ["python", "-m", "sglang.launch_server"] and _flag(argv, "--model-path") == "org/judge"
    assert _flag(argv, "--grammar-backend") == "xgrammar" and _flag(argv, "--port") == "30000"
    assert "--constrained-json-disable-any-whitespace" in argv and "--enable-cache-report" in argv
    assert "--max-logprobs" not in argv and "--model" not in argv


def test_a_cpu_vllm_gets_its_environment_unless_the_user_set_it():
    opts = ServeOptions("m")
    assert engine_env(opts, {}, cpu=True) == {"VLLM_TARGET_DEVICE": "cpu", "VLLM_HOST_IP": "127.0.0.1",
                                              "VLLM_CPU_KVCACHE_SPACE": "1"}
    assert engine_env(opts, {"VLLM_CPU_KVCACHE_SPACE": "8"}, cpu=True).get("VLLM_CPU_KVCACHE_SPACE") is None
    assert "VLLM_HOST_IP" not in engine_env(ServeOptions("m", host="0.0.0.0"), {}, cpu=True)
    assert engine_env(opts, {}, cpu=False) == {} and engine_env(ServeOptions("m", engine="sglang"), {}, True) == {}


def test_print_command_prints_a_shell_line_and_runs_nothing(capsys, monkeypatch):
    monkeypatch.setattr(serve_cli, "cpu_only", lambda: True)
    monkeypatch.delenv("VLLM_TARGET_DEVICE", raising=False)
    monkeypatch.setattr(serve_cli.os, "execvpe", lambda *a: pytest.fail("--print-command ran the engine"))
    assert vlmjudge_main(["serve", "--model", "my model", "--port", "8123", "--print-command",
                          "--", "--max-model-len", "4096"]) == 0
    words = shlex.split(capsys.readouterr().out)
    assert words[0] == "VLLM_TARGET_DEVICE=cpu" and "my model" in words  # quoted, so it splits back
    assert _flag(words, "--port") == "8123" and words[-2:] == ["--max-model-len", "4096"]


def test_without_the_engine_it_exits_2_with_one_line(capsys, monkeypatch):
    monkeypatch.setattr(serve_cli, "engine_installed", lambda engine: False)
    monkeypatch.setattr(serve_cli.os, "execvpe", lambda *a: pytest.fail("ran an engine that is not there"))
    assert serve_cli.main(["--model", "m"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "vlmjudge[vllm]" in err and "make_vllm_env.sh" in err


def test_it_becomes_the_engine_with_execvpe(monkeypatch):
    ran = {}
    monkeypatch.setattr(serve_cli, "engine_installed", lambda engine: True)
    monkeypatch.setattr(serve_cli, "cpu_only", lambda: False)
    monkeypatch.setattr(serve_cli.os, "execvpe", lambda path, argv, env: ran.update(path=path, argv=argv, env=env))
    serve_cli.main(["--model", "m", "--engine", "sglang"])
    assert ran["path"] == ran["argv"][0] and ran["argv"][1:3] == ["-m", "sglang.launch_server"]
    assert "PATH" in ran["env"]  # the caller's environment goes along


@pytest.mark.parametrize("flags, words", [
    (["--host", ""], "would bind every interface"),
    (["--host", "  "], "would bind every interface"),
    (["--host", "127.0.0.1 8.8.8.8"], "holds spaces"),
    (["--port", "0"], "--port must be 1 to 65535, got 0"),
    (["--port", "99999"], "--port must be 1 to 65535, got 99999"),
    (["--port", "-1"], "--port must be 1 to 65535"),
    (["--max-logprobs", "0"], "vLLM takes -1 or more, and 0 refuses every request for logprobs"),
    (["--max-logprobs", "-2"], "--max-logprobs must be -1 (the whole vocabulary) or 1 and more, got -2"),
])
def test_a_flag_out_of_range_is_one_line_and_status_2(flags, words, capsys, monkeypatch):
    monkeypatch.setattr(serve_cli.os, "execvpe", lambda *a: pytest.fail("started an engine on a bad flag"))
    assert vlmjudge_main(["serve", "--model", "m", *flags, "--print-command"]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vlmjudge serve: error: ") and words in lines[0], lines
    assert captured.out == ""  # nothing printed to run


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.5"])
def test_serving_beyond_loopback_without_a_key_warns(host, capsys, monkeypatch):
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    assert vlmjudge_main(["serve", "--model", "m", "--host", host, "--print-command"]) == 0
    captured = capsys.readouterr()
    assert "warning: serving on" in captured.err and "no API key" in captured.err and "--api-key" in captured.err
    assert _flag(shlex.split(captured.out), "--host") == host
    for keyed in (["--", "--api-key", "k"], ["--", "--api-key=k"]):
        assert vlmjudge_main(["serve", "--model", "m", "--host", host, "--print-command", *keyed]) == 0
        assert capsys.readouterr().err == ""
    monkeypatch.setenv("VLLM_API_KEY", "k")
    assert vlmjudge_main(["serve", "--model", "m", "--host", host, "--print-command"]) == 0
    assert capsys.readouterr().err == ""


def test_the_edges_of_each_range_are_accepted(capsys):
    for flags in (["--port", "1"], ["--port", "65535"], ["--max-logprobs", "1"], ["--max-logprobs", "-1"]):
        assert vlmjudge_main(["serve", "--model", "m", *flags, "--print-command"]) == 0, flags
    assert capsys.readouterr().err == ""  # loopback: no warning either


def test_a_media_root_becomes_vllm_s_allowed_local_media_path(tmp_path, capsys):
    argv = engine_argv(ServeOptions("m", media_root=str(tmp_path / ".")), "python")
    assert _flag(argv, "--allowed-local-media-path") == str(tmp_path.resolve())
    assert "--allowed-local-media-path" not in engine_argv(ServeOptions("m"), "python")
    assert vlmjudge_main(["serve", "--model", "m", "--media-root", str(tmp_path), "--print-command"]) == 0
    assert _flag(shlex.split(capsys.readouterr().out), "--allowed-local-media-path") == str(tmp_path.resolve())


@pytest.mark.parametrize("where, engine, words", [
    ("missing", "vllm", "is not a folder"),
    ("file", "vllm", "is not a folder"),
    ("folder", "sglang", "SGLang has no such setting"),
])
def test_a_media_root_that_cannot_serve_is_one_line_and_status_2(tmp_path, capsys, where, engine, words):
    (tmp_path / "file").write_text("x")
    (tmp_path / "folder").mkdir()
    code = vlmjudge_main(["serve", "--model", "m", "--engine", engine, "--media-root", str(tmp_path / where),
                          "--print-command"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and words in lines[0]
