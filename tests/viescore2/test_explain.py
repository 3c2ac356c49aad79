"""Parameter-free explanations against hand-written expectations."""
from viescore2.explain import explain, regions, score_level
from viescore2.grid import Grid


def test_single_region():
    assert explain("score: 6/10\nr2: 2,3\nr3: 2,3") == (
        "The overall score is moderate (6/10).\n"
        "Defects in 4 cells, 1 region: top left (rows 2-3, columns 2-3, 4 cells).")


def test_multi_region_largest_first_three_described_rest_counted():
    text = "r1: 1,16\nr8: 7,8,9\nr9: 8\nr15: 15,16\nr16: 1"
    assert explain(text) == (
        "Defects in 9 cells, 5 regions: center (rows 8-9, columns 7-9, 4 cells); "
        "bottom right (row 15, columns 15-16, 2 cells); top left (row 1, column 1, 1 cell); "
        "and 2 smaller regions.")


def test_marked_split_grids_tie_artifacts_to_pq_and_misalignments_to_sc():
    text = "pq: 3/10\nsc: 8.5/10\nartifact:\nr14: 2!,3!\nr15: 2\nmisalign:\nnone"
    assert explain(text) == (
        "Perceptual quality is low (3/10). Visual artifacts in 3 cells, 1 region: "
        "bottom left (rows 14-15, columns 2-3, 3 cells). Most of these cells are marked as high-coverage.\n"
        "Semantic consistency is high (8.5/10). No semantic misalignment is marked.\n"
        "The overall score (geometric mean of PQ and SC) is moderate (5.05/10).")


def test_clean_and_unparseable():
    assert explain("score: 9/10\nnone") == "The overall score is high (9/10).\nNo defect is marked."
    assert explain("looks fine to me") == "The output could not be parsed: no score and no defect grid."
    assert explain("pq: 2/10\nsc: 2/10\nartifact:\nmisalign:") == (
        "Perceptual quality is low (2/10).\nSemantic consistency is low (2/10).\n"
        "The overall score (geometric mean of PQ and SC) is low (2/10).\n"
        "The artifact and misalignment grids could not be parsed.")
    # one category section alone is read as the release reads it: its cells, without categories
    assert explain("pq: 2/10\nsc: 2/10\nartifact:\nr1: 1") == (
        "Perceptual quality is low (2/10).\nSemantic consistency is low (2/10).\n"
        "Defects in 1 cell, 1 region: top left (row 1, column 1, 1 cell).\n"
        "The overall score (geometric mean of PQ and SC) is low (2/10).")


def test_components_are_four_connected():
    found = regions(Grid({(5, 5), (6, 6), (6, 5)}))
    assert [r.size for r in found] == [3]
    assert [r.size for r in regions(Grid({(5, 5), (6, 6)}))] == [1, 1]


def test_score_levels():
    assert [score_level(s) for s in (0, 4.99, 5, 7.99, 8, 10)] == ["low", "low", "moderate", "moderate", "high",
                                                                   "high"]


def test_coverage_wording_follows_the_share_of_marked_cells():
    assert explain("r1: 1!,2!").endswith("All of these cells are marked as high-coverage.")
    assert explain("r1: 1!,2,3").endswith("Some of these cells are marked as high-coverage.")
    assert explain("r1: 1,2,3").endswith("3 cells).")
