"""Bad input to `vlmjudge benchmark`: each case is one line on standard error and exit status 2,
before any image is made or judged (nothing is written under --out, no judge loads)."""
import pytest

from vlmjudge.cli import main


@pytest.fixture
def setup(tmp_path, write_prompts):
    """A prompts file, two good model folders, a folder standing for the judge (never loaded here)."""
    from PIL import Image

    write_prompts(tmp_path / "p.csv", ["a", "b"])
    for model in ("m1", "m2"):
        (tmp_path / model).mkdir()
        for pid in ("a", "b"):
            Image.new("RGB", (8, 8)).save(tmp_path / model / f"{pid}.png")
    (tmp_path / "judge").mkdir()
    (tmp_path / "several" / "a").mkdir(parents=True)
    Image.new("RGB", (8, 8)).save(tmp_path / "several" / "a" / "0.png")
    (tmp_path / "empty").mkdir()
    (tmp_path / "file.txt").write_text("x")
    (tmp_path / "nopipe").mkdir()
    return tmp_path


BASE = ["--prompts", "p.csv", "--model-images", "m1=m1", "--methods", "terravis", "--judge", "judge/",
        "--device", "cpu", "--out", "out"]


def swap(args, flag, value):
    """BASE with `flag`'s value replaced (or the flag dropped when value is None)."""
    args = list(args)
    at = args.index(flag)
    return args[:at] + args[at + 2:] if value is None else args[:at + 1] + [value] + args[at + 2:]


CASES = {
    "unknown suite": (swap(BASE, "--prompts", None) + ["--suite", "sdxl-bench"], "no suite 'sdxl-bench'"),
    "offline suite": (swap(BASE, "--prompts", None) + ["--suite", "partiprompts"], "--suite-file"),
    "suite and prompts": (BASE + ["--suite", "drawbench"], "one of them"),
    "no prompts": (swap(BASE, "--prompts", None), "one of them"),
    "subset with prompts": (BASE + ["--subset", "527"], "--subset and --suite-file go with --suite"),
    "prompts is a folder": (swap(BASE, "--prompts", "m1"), "prompts file"),
    "unknown method": (swap(BASE, "--methods", "terravis,nosuch"), "no method 'nosuch'"),
    "method twice": (swap(BASE, "--methods", "terravis,terravis"), "given twice"),
    "model twice": (BASE + ["--model-images", "m1=m2"], "'m1' is given twice"),
    "unsafe model name": (swap(BASE, "--model-images", "../m=m1"), "cannot name a folder"),
    "no equals sign": (swap(BASE, "--model-images", "m1"), "expected NAME=VALUE"),
    "no such folder": (swap(BASE, "--model-images", "m1=nowhere"), "no such folder"),
    "file for a folder": (swap(BASE, "--model-images", "m1=file.txt"), "is a file"),
    "empty folder": (swap(BASE, "--model-images", "m1=empty"), "holds no image"),
    "layouts differ": (BASE + ["--model-images", "m3=several"], "could not pair"),
    "option NaN": (BASE + ["--method-option", "terravis.lam=nan"], "not a finite number"),
    "option Infinity": (BASE + ["--method-option", "terravis.alpha=Infinity"], "not a finite number"),
    "option unknown method": (BASE + ["--method-option", "fager.x=1"], "not one of --methods"),
    "option unknown key": (BASE + ["--method-option", "terravis.colour=1"], "no option 'colour'"),
    "out is a file": (swap(BASE, "--out", "file.txt"), "is a file"),
    "generator folder missing": (BASE + ["--generator", "g=pipes/none/"], "no such pipeline folder"),
    "generator not a pipeline": (BASE + ["--generator", "g=nopipe"], "no model_index.json"),
    "generator is a file": (BASE + ["--generator", "g=file.txt"], "is a file"),
    "generator callable missing": (BASE + ["--generator", "g=vlmjudge.generators:nothing_here"], "has no attribute"),
    "generator offline hub id": (BASE + ["--generator", "g=org/never-cached-pipeline"], "pipeline"),
    "human missing": (BASE + ["--human", "labels.jsonl"], "no such file"),
    "human is a folder": (BASE + ["--human", "m1"], "is a folder"),
    "confidence NaN": (BASE + ["--confidence", "nan"], "confidence must be a number between 0 and 1"),
    "reference missing": (swap(swap(BASE, "--methods", "regeneration"), "--judge", None), "needs a reference image"),
    "judge missing": (swap(BASE, "--judge", "nowhere/"), "no such checkpoint folder"),
    "ray gpus negative": (BASE + ["--ray", "--ray-gpus-per-actor", "-1"], "ray_gpus_per_actor"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_one_line_and_status_2_before_any_work(setup, monkeypatch, capsys, case):
    args, words = CASES[case]
    monkeypatch.chdir(setup)
    status = main(["benchmark", *args])
    err = capsys.readouterr().err.strip()
    assert status == 2, err
    assert words in err and len(err.splitlines()) == 1, err
    out = setup / "out"
    assert not (out / "runs").exists() and not (out / "images").exists()


def test_argparse_refuses_bad_numbers(setup, monkeypatch, capsys):
    monkeypatch.chdir(setup)
    for flag, value in (("--steps", "0"), ("--images-per-prompt", "-1"), ("--chunk-size", "x"), ("--seed", "1.5")):
        with pytest.raises(SystemExit) as caught:
            main(["benchmark", *BASE, flag, value])
        assert caught.value.code == 2
        assert flag in capsys.readouterr().err
