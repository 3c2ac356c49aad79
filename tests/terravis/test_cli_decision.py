"""`terravis score --decision`: TerraVis-H and GPTScore read by constrained generation on a tiny
Qwen3-VL, the manifest recording the mode, and an unknown mode refused by argparse."""
import pytest

from terravis import load_records
from vlmjudge.cli import main


def score(images, tiny_model, pack_file, out, *extra):
    """One `terravis score` run over the fixture images; its records and manifest."""
    root = images["modelA/white.png"].parents[1]
    argv = ["terravis", "score", str(root), "--model", tiny_model, "--device", "cpu", "--pack", str(pack_file),
            "--out", str(out), "--quiet", "--no-cache", *extra]
    assert main(argv) == 0
    return load_records(out)


@pytest.mark.parametrize("variant", ["holistic", "gptscore"])
def test_generate_reads_the_rating_the_probabilities_favour(tmp_path, tiny_model, pack_file, images, variant):
    generated, manifest = score(images, tiny_model, pack_file, tmp_path / "gen.jsonl",
                                "--variant", variant, "--decision", "generate")
    chosen, default_manifest = score(images, tiny_model, pack_file, tmp_path / "choice.jsonl", "--variant", variant)
    assert manifest["decoding"]["decision"] == "generate" and manifest["variant"] == variant
    assert default_manifest["decoding"]["decision"] == "choice"  # the CLI default is the Python default
    assert {r.variant for r in generated} == {variant}
    assert all(r.rating_probs is None for r in generated)  # generation reads no probabilities
    assert all(r.rating_probs for r in chosen if r.status != "failed")
    # greedy generation restricted to the options picks the option the probabilities rank first
    assert [r.status for r in generated] == [r.status for r in chosen]
    assert [r.rating for r in generated] == [r.rating for r in chosen]
    assert any(r.rating is not None for r in generated), "the tiny model gave no rating at all"


def test_an_unknown_decision_mode_is_an_argparse_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["terravis", "score", str(tmp_path), "--model", "m", "--out", str(tmp_path / "r.jsonl"),
              "--decision", "probs"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "--decision" in err and "invalid choice: 'probs'" in err
