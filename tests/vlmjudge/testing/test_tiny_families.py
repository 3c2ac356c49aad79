"""`python -m vlmjudge.testing <family> DIR [--sliding-window N | --attention-chunk N]`."""
import json

import pytest

from vlmjudge.testing.__main__ import main
from vlmjudge.testing.tiny_families import build_tiny_family


def test_cli_builds_a_family_with_a_short_window(tmp_path, capsys):
    assert main(["gemma3", str(tmp_path / "g"), "--sliding-window", "8"]) == 0
    config = json.loads((tmp_path / "g" / "config.json").read_text())
    assert config["model_type"] == "gemma3" and config["text_config"]["sliding_window"] == 8
    assert "built gemma3" in capsys.readouterr().out


def test_window_options_belong_to_windowed_families(tmp_path):
    with pytest.raises(ValueError, match="no window option"):
        build_tiny_family("qwen2_vl", tmp_path / "q", sliding_window=8)
    with pytest.raises(ValueError, match="attention_chunk"):
        build_tiny_family("llama4", tmp_path / "l", sliding_window=8)
    with pytest.raises(ValueError, match="unknown family"):
        build_tiny_family("gpt", tmp_path / "x")


def test_same_seed_same_weights(tmp_path):
    from safetensors.torch import load_file
    a = load_file(f"{build_tiny_family('gemma4', tmp_path / 'a', seed=3)}/model.safetensors")
    b = load_file(f"{build_tiny_family('gemma4', tmp_path / 'b', seed=3)}/model.safetensors")
    assert a.keys() == b.keys() and all((a[k] == b[k]).all() for k in a)


def test_cli_refuses_a_window_a_family_cannot_take(tmp_path):
    with pytest.raises(SystemExit):
        main(["qwen3_vl", str(tmp_path / "q"), "--sliding-window", "8"])
    assert not (tmp_path / "q").exists()
