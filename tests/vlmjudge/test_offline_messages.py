"""Hub-only defaults and optional dependencies fail at once, in one line that says what to pass or
install: the judge model of a Space, `unavailable_reason`, and `python -m vlmjudge.testing`'s
diffusers builders."""
import subprocess
import sys
import time

import pytest

from vlmjudge.offline import ModelUnavailableError, unavailable_reason


@pytest.fixture
def empty_hub(tmp_path, monkeypatch):
    """An empty Hugging Face cache, offline."""
    from huggingface_hub import constants
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    return tmp_path / "hub"


def test_local_folders_and_non_hub_ids_are_left_to_from_pretrained(tmp_path, empty_hub):
    assert unavailable_reason(str(tmp_path)) is None
    assert unavailable_reason("not a hub id, a/b/c") is None  # from_pretrained says what is wrong with it


def test_an_uncached_id_offline_is_refused_without_a_lookup(empty_hub, monkeypatch):
    import huggingface_hub

    def no_lookup(*args, **kwargs):
        raise AssertionError("offline, the Hub must not be asked")

    monkeypatch.setattr(huggingface_hub, "model_info", no_lookup)
    assert "HF_HUB_OFFLINE is set" in unavailable_reason("org/missing-model")


def test_an_uncached_id_with_the_hub_unreachable_gives_the_lookup_failure(empty_hub, monkeypatch):
    import huggingface_hub

    asked = []

    def unreachable(model_id, revision=None, timeout=None):
        asked.append((model_id, timeout))
        raise ConnectionError("name or service not known")

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(huggingface_hub, "model_info", unreachable)
    assert unavailable_reason("org/missing-model") == (
        "not a local folder, not in the Hugging Face cache, and the Hub lookup failed (ConnectionError)")
    assert asked == [("org/missing-model", 5.0)]  # one short lookup, not from_pretrained's retries


def test_app_from_env_names_vlmjudge_model_when_the_default_judge_is_missing(empty_hub, monkeypatch):
    from vlmjudge.hub.app import app_from_env
    import toy_method

    monkeypatch.delenv("VLMJUDGE_MODEL", raising=False)
    monkeypatch.delenv("VLMJUDGE_BACKEND", raising=False)
    spec = __import__("dataclasses").replace(toy_method.SPEC, default_model="org/default-judge")
    started = time.monotonic()
    with pytest.raises(ModelUnavailableError, match="set VLMJUDGE_MODEL") as caught:
        app_from_env(spec)
    assert time.monotonic() - started < 5
    assert "'org/default-judge'" in str(caught.value) and "\n" not in str(caught.value)
    assert isinstance(caught.value, OSError)


def run_testing_cli(args, blocked_module):
    """`python -m vlmjudge.testing ARGS` with `blocked_module` made unimportable."""
    code = (f"import sys; sys.modules[{blocked_module!r}] = None; sys.argv[1:] = {args!r}; "
            "from vlmjudge.testing.__main__ import main; sys.exit(main())")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("kind", ["text_to_image", "image_edit"])
def test_diffusers_builders_without_diffusers_say_what_to_install(tmp_path, kind):
    proc = run_testing_cli([kind, str(tmp_path / kind)], "diffusers")
    assert proc.returncode == 2 and proc.stdout == ""
    (line,) = proc.stderr.strip().splitlines()  # one line, no traceback
    assert line.startswith(f"python -m vlmjudge.testing {kind}: needs diffusers")
    assert 'pip install -e ".[diffusers]"' in line
    assert not (tmp_path / kind).exists()


def test_a_missing_module_that_is_no_extra_keeps_its_traceback(tmp_path):
    proc = run_testing_cli(["clip", str(tmp_path / "clip")], "transformers")
    assert proc.returncode == 1 and "Traceback" in proc.stderr and "ModuleNotFoundError" in proc.stderr


def test_terravis_style_classifier_default_offline_fails_in_one_line(empty_hub):
    from terravis.style import DEFAULT_MODEL, SigLIPStyleClassifier

    classifier = SigLIPStyleClassifier()  # loads on first use, so building it stays free
    started = time.monotonic()
    with pytest.raises(ModelUnavailableError) as caught:
        classifier(["an image"])
    assert time.monotonic() - started < 5
    message = str(caught.value)
    assert f"{DEFAULT_MODEL!r} (the default)" in message and "HF_HUB_OFFLINE" in message
    assert "model=" in message and "\n" not in message
