"""Pure statistics on numpy and scipy, no model and no judge: rank correlations, paired comparisons
of runs (intervals, tests, corrections, leaderboards) and agreement with people.

As in `scipy.stats`, the functions a user calls are names of the package (`from vlmjudge.stats
import paired_bootstrap, holm`), each loaded on first use, so `import vlmjudge.stats` stays light
(numpy and scipy come with the first name used). The engine under `compare_runs` (`resample`,
`board`, `blocks`) and the readers of public human-judgment sets (`human_sets`) stay in their modules.
No module bears the name of a name it exports: Python would put the module in the function's
place once anything imported it.
"""
from __future__ import annotations

from vlmjudge.lazy import lazy_exports

#: Public name -> the module it lives in; each loads on first use.
_EXPORTS = {
    **dict.fromkeys(("average_ranks", "pearson", "spearman", "too_few"), ".correlation"),
    **dict.fromkeys(("Difference", "Estimate", "HumanCeiling", "PairwiseAccuracy", "agreement",
                     "agreement_difference", "ceiling_interval", "inter_annotator", "statistic_value",
                     "tie_calibrated_accuracy"),
                    ".human_agreement"),
    **dict.fromkeys(("Interval", "bootstrap_ci", "interval_text", "mean_keys", "mean_with_interval"), ".interval"),
    **dict.fromkeys(("benjamini_hochberg", "holm"), ".multiple"),
    **dict.fromkeys(("PairedBootstrap", "paired_bootstrap"), ".paired"),
    "PairTable": ".pair_accuracy",
    **dict.fromkeys(("Items", "Missing", "Paired", "align", "align_items", "is_records", "read_items"), ".pairing"),
    **dict.fromkeys(("PermutationTest", "paired_permutation_test"), ".permutation"),
    **dict.fromkeys(("minimum_detectable_effect", "required_n"), ".power"),
    **dict.fromkeys(("BradleyTerry", "PlayerStrength", "bradley_terry"), ".preferences"),
    **dict.fromkeys(("kendall_tau", "mean_ranks", "ranking_agreement", "ranks"), ".rankings"),
    **dict.fromkeys(("consistency_note", "unreliable", "unscored_warnings"), ".reliability"),
    **dict.fromkeys(("CompareInputError", "MixedRunsError", "RunSet", "compare_runs", "mixed_reasons", "read_runs"),
                    ".runs"),
    "compare": ".score_runs",
    "resampling_problem": ".settings",
    **dict.fromkeys(("ColumnMean", "ColumnShare", "RecordRows", "RowReadError", "Statistic", "categories_of",
                     "item_rows", "stacked", "value_of"), ".statistic"),
    **dict.fromkeys(("SwapTest", "paired_swap_test", "swap_pvalue"), ".swap"),
}

__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
