"""`python -m vlmjudge.testing`: the tiny builders from the shell, with Hub-cache install."""
import os
import subprocess
import sys


def run_builder(args, env):
    return subprocess.run([sys.executable, "-m", "vlmjudge.testing", *args], env=env, capture_output=True,
                          text=True, timeout=300)


def test_builds_and_installs_by_hub_id(tmp_path, kind="qwen3_vl"):
    env = {**os.environ, "HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "1"}
    proc = run_builder([kind, str(tmp_path / kind), "--hub-id", f"org/tiny-{kind}"], env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    revision = proc.stdout.strip().splitlines()[-1].split()[-1]
    assert len(revision) == 40
    load = ("import sys; from transformers import AutoConfig; "
            f"c = AutoConfig.from_pretrained('org/tiny-{kind}', revision='{revision}'); print(c.model_type)")
    out = subprocess.run([sys.executable, "-c", load], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "qwen3_vl"


def test_unknown_kind_is_refused(tmp_path):
    proc = run_builder(["nope", str(tmp_path / "x")], dict(os.environ))
    assert proc.returncode == 2 and "invalid choice" in proc.stderr


def test_vllm_option_builds_a_head_size_vllm_runs(tmp_path):
    proc = run_builder(["qwen3_vl", str(tmp_path / "q"), "--vllm"], dict(os.environ, HF_HUB_OFFLINE="1"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    from transformers import AutoConfig
    text = AutoConfig.from_pretrained(tmp_path / "q").text_config
    assert text.head_dim == 32 and sum(text.rope_parameters["mrope_section"]) == 16


def test_vllm_option_is_refused_for_a_family_it_does_not_build(tmp_path):
    proc = run_builder(["llava", str(tmp_path / "x"), "--vllm"], dict(os.environ))
    assert proc.returncode == 2 and "--vllm builds" in proc.stderr
