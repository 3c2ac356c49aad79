"""`vlmjudge agreement RUN.jsonl [RUN.jsonl ...] HUMAN --out DIR`: how far to trust a judge.

A judge is worth its scores only as far as they follow people's; this joins each run to human
labels by id (the method's own protocol reads them, `MethodSpec.human`), writes the five
agreement statistics with bootstrap intervals, the method's tables, the human ceiling when
several annotators labelled the same items, and, given several judges on the same images, which
agrees best with a paired interval on the difference. Writes DIR/agreement.json and
DIR/report.html; bad inputs are one line and exit status 2.
"""
from __future__ import annotations

import argparse
import dataclasses
import itertools
import os
import sys
from pathlib import Path
from typing import Any

from ..stats.human_sets import PUBLIC_SETS, public_set_statistics, read_public_set
from .errors import CommandError

#: How many ids a console line lists before it says "and N more".
SHOWN_IDS = 8


def configure_agreement(sub: Any) -> None:
    """Add the `agreement` sub-command to the `vlmjudge` parser."""
    from ..stats.human_agreement import STATISTICS
    from .report_command import add_dpi_flag
    from .resampling import add_resampling_flags

    parser = sub.add_parser(
        "agreement", help="how far to trust a judge: agreement of runs with human labels",
        description="Join each RUN.jsonl to the HUMAN labels by id and measure agreement (Pearson, Spearman, "
                    "Kendall tau-b and tau-c, tie-calibrated pairwise accuracy, each with a bootstrap interval). "
                    "With several runs (several judges on the same images) it names the judge that agrees best, "
                    "with a paired interval on each difference. Writes DIR/agreement.json and DIR/report.html. "
                    "Exit status 2 on bad input (no overlap, fewer than 2 items, unreadable files).")
    parser.add_argument("inputs", nargs="+", metavar="RUN.jsonl ... HUMAN",
                        help="one or more runs' records, then the human labels (the last path)")
    parser.add_argument("--out", type=Path, required=True, help="folder for agreement.json and report.html")
    parser.add_argument("--human-format", choices=("labels", *PUBLIC_SETS), default="labels",
                        help="labels: JSON lines as the annotation app writes them ({id, human} or {id, annotator, "
                             "method, ...}); or a public set's annotation file (default: labels)")
    parser.add_argument("--method", default=None,
                        help="the method whose protocol reads the labels (default: the runs' manifest, else the "
                             "labels' method field, else the generic {id, human} form)")
    parser.add_argument("--statistic", choices=STATISTICS, default="spearman",
                        help="the statistic judges are compared on (default: spearman)")
    parser.add_argument("--skip-other-labels", action="store_true",
                        help="leave out label lines that name another method than the runs' (counted on stderr "
                             "and in agreement.json) instead of refusing the labels file")
    add_resampling_flags(parser, default_resamples=1000, resamples_help="bootstrap resamples")
    add_dpi_flag(parser)
    parser.set_defaults(func=run_agreement, resume_hint="agreement writes its files only when it is complete; "
                                                       "run it again")


def _load_runs(paths: list[Path]) -> list[dict[str, Any]]:
    """Each run's records (checked as `vlmjudge compare` checks them: `vlmjudge.run_records`) and
    manifest, named by its judge model (else the file name); a run given twice is refused."""
    from ..run_records import RunFileError, read_run_records

    seen: dict[str, Path] = {}
    runs = []
    for path in paths:
        if os.path.realpath(path) in seen:
            raise CommandError(f"the same run is given twice ({seen[os.path.realpath(path)]}, {path})")
        seen[os.path.realpath(path)] = path
        try:
            read = read_run_records(path)
        except RunFileError as error:
            raise CommandError(str(error)) from None
        runs.append({"path": str(path), "records": read.records, "where": read.where, "manifest": read.manifest,
                     "name": str(read.manifest.get("model") or path.name)})
    names = [run["name"] for run in runs]
    for run in runs:
        if names.count(run["name"]) > 1:
            run["name"] = f"{run['name']} ({run['path']})"
    return runs


def _method(args: argparse.Namespace, runs: list[dict[str, Any]], lines: list[dict[str, Any]] | None) -> str | None:
    """The method whose protocol applies: --method, else the runs' manifests, else the labels'; a
    --method the manifests contradict is refused."""
    from ..stats.human_sets.labels import label_method

    named = {str(run["manifest"]["method"]) for run in runs if run["manifest"].get("method")}
    if len(named) > 1:
        raise CommandError(f"the runs come from different methods {sorted(named)}; compare judges of one method")
    if args.method and named and args.method not in named:
        raise CommandError(f"--method {args.method}, but the runs' manifests say {named.pop()}")
    if args.method or named:
        return args.method or named.pop()
    try:
        return label_method(lines) if lines else None
    except ValueError as error:
        raise CommandError(f"{error} (or give --method)") from None


def _own_labels(numbered: list[tuple[int, dict[str, Any]]], method: str | None, path: Path,
                skip: bool) -> tuple[list[dict[str, Any]], int]:
    """The label lines of `method` (and lines naming none), and how many name another method: those
    are refused, naming the first, unless `skip` leaves them out (counted)."""
    other = [(number, line) for number, line in numbered
             if method is not None and line.get("method") and str(line["method"]) != method]
    if other and not skip:
        number, line = other[0]
        raise CommandError(f"{path}:{number}: a {line['method']} label, but the runs are {method}'s "
                           f"({len(other)} such line(s)); give {method}'s labels, or --skip-other-labels to leave "
                           "them out (counted)")
    left_out = {number for number, _ in other}
    return [line for number, line in numbered if number not in left_out], len(other)


def _protocol(method: str | None):
    """The method's human protocol, or the generic one when it declares none."""
    from ..registry import get_method
    from ..stats.human_sets.protocol import GENERIC

    if method is None:
        return GENERIC
    try:
        return get_method(method).human or GENERIC
    except (KeyError, ImportError) as error:
        raise CommandError(f"method {method!r}: {error}") from None


def _human_rows(args: argparse.Namespace, path: Path, runs: list[dict[str, Any]]):
    """The human rows, the protocol that reads and joins them, the method and how many label lines of
    another method were left out (with --skip-other-labels)."""
    from ..outputs import JsonlError, iter_jsonl
    from ..stats.human_sets.labels import label_rows
    from ..stats.human_sets.protocol import no_details, only_value, single_source

    try:
        if args.human_format == "labels":
            numbered = list(iter_jsonl(path))
            if not numbered:
                raise CommandError(f"{path} holds no labels")
            method = _method(args, runs, [line for _, line in numbered])
            lines, left_out = _own_labels(numbered, method, path, args.skip_other_labels)
            if not lines:
                raise CommandError(f"{path} holds no {method} labels ({left_out} of another method left out)")
            protocol = _protocol(method)
            return label_rows(lines, protocol, where=str(path)), protocol, method, left_out
        rows = read_public_set(args.human_format, path)
    except (JsonlError, OSError, KeyError, ValueError) as error:
        raise CommandError(f"cannot read human labels {path}: {error}") from None
    method = _method(args, runs, None)
    public = dataclasses.replace(_protocol(method), sources=single_source, combine=only_value, details=no_details)
    return [{**row, "id": row["image"]} for row in rows], public, method, 0


def _scores_in_range(runs: list[dict[str, Any]], method: str | None) -> None:
    """Every scored record's score within the method's `score_range`, as `vlmjudge compare` checks it."""
    from ..registry import get_method
    from ..run_records import RunFileError, RunRecords, check_score_ranges

    if method is None:
        return
    try:
        check_score_ranges([RunRecords(run["records"], run["where"], run["manifest"]) for run in runs],
                           tuple(get_method(method).score_range), method)
    except RunFileError as error:
        raise CommandError(str(error)) from None


def _shown(ids: list[str]) -> str:
    """A few ids for a console line, with how many more there are."""
    more = f" and {len(ids) - SHOWN_IDS} more" if len(ids) > SHOWN_IDS else ""
    return ", ".join(ids[:SHOWN_IDS]) + more


def _no_match(run_path: str, record_ids: list[str], rows, human_path: Path, human_format: str) -> str:
    """Why nothing joined, naming what was compared and a few ids of each side: a public set is
    joined by the image path inside its download, not by its own row ids."""
    human_ids = _shown([str(row["id"]) for row in rows])
    if human_format == "labels":
        return (f"no record id of {run_path} matches a label id of {human_path} (record ids: "
                f"{_shown(record_ids)}; label ids: {human_ids})")
    return (f"no record id of {run_path} matches an image path of the {human_format} file {human_path}: "
            f"a public set is joined by the image path inside the set's download, not by its row ids "
            f"(record ids: {_shown(record_ids)}; image paths: {human_ids})")


def _estimates(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The statistics as JSON: value, interval, resamples (and epsilon for pairwise accuracy)."""
    return {name: dataclasses.asdict(estimate) for name, estimate in result.items()}


def _judge_run(run: dict[str, Any], rows, protocol, human_path: Path, args: argparse.Namespace) -> dict[str, Any]:
    """One run joined to the people's rows, its statistics and the method's details."""
    from ..stats.correlation import too_few
    from ..stats.human_agreement import STATISTICS, agreement
    from ..stats.human_sets.join import index_records, join
    from ..stats.reliability import unreliable

    try:
        records = index_records(run["records"], protocol, run["path"])
        joined = join(records, rows, protocol)
    except (KeyError, ValueError) as error:
        raise CommandError(str(error)) from None
    if not joined.matched_rows:
        raise CommandError(_no_match(run["path"], list(records), rows, human_path, args.human_format))
    if len(joined.ids) < 2:
        raise CommandError(f"{run['path']}: {len(joined.ids)} item(s) have both a judge score and a human label; "
                           "agreement needs at least 2")
    for what, ids in (("human items with no record", joined.human_only), ("records with no human label",
                                                                          joined.run_only),
                      ("items the judge did not score", joined.unscored),
                      ("items people marked not applicable", joined.not_applicable)):
        if ids:
            print(f"{run['name']}: {len(ids)} {what}: {_shown(ids)}", file=sys.stderr)
    few = too_few(len(joined.ids))
    try:
        stats = _estimates(agreement(joined.judge, joined.human, groups=joined.groups, n_resamples=args.resamples,
                                     confidence=args.confidence, seed=args.seed)) if few is None else \
            {name: {"value": None, "low": None, "high": None, "n_resamples": 0, "reason": few} for name in STATISTICS}
    except ValueError as error:
        raise CommandError(f"{run['path']}: {error}") from None
    try:
        own = public_set_statistics(args.human_format, rows, dict(zip(joined.ids, joined.judge)),
                                    n_resamples=args.resamples, confidence=args.confidence, seed=args.seed)
    except ValueError as error:
        raise CommandError(f"{run['path']}: {args.human_format}'s own statistics: {error}") from None
    return {"name": run["name"], "path": run["path"], "model": run["manifest"].get("model"),
            "matched": len(joined.ids), "statistics": stats, "unreliable": unreliable(len(joined.ids)),
            "set_statistics": own,
            "unmatched": {"human_only": joined.human_only, "run_only": joined.run_only},
            "unscored": joined.unscored, "not_applicable": joined.not_applicable,
            "details": _details(protocol, joined.matched_rows, records, run["path"]),
            "items": [{"id": i, "judge": j, "human": h, **({"group": joined.groups[k]} if joined.groups else {})}
                      for k, (i, j, h) in enumerate(zip(joined.ids, joined.judge, joined.human))]}


def _details(protocol, rows, records, where: str) -> dict[str, Any]:
    """The method's own tables and measures; a record it cannot read is a one-line error."""
    try:
        return protocol.details(rows, records)
    except (KeyError, TypeError, ValueError) as error:
        raise CommandError(f"{where}: the method's comparison could not read a record or label: {error}") from None


#: What the human ceiling assumes of the raters, said beside it in the JSON, the table and the page.
CEILING_ASSUMPTION = ("each annotator against the mean of the others: the raters are taken as interchangeable, "
                      "every item's raters drawn from one pool; an item rated by fewer than 2 annotators compares "
                      "no one and is left out, and so is an annotator sharing under 2 items with the others")


def _ceiling(rows, args: argparse.Namespace) -> dict[str, Any] | None:
    """The human ceiling (`inter_annotator`), with a bootstrap interval over items at the run's
    confidence (`ceiling_interval`), when some item has two or more annotators."""
    from ..stats.human_agreement import ceiling_interval, inter_annotator
    from ..stats.human_sets.labels import annotator_table

    labelled = [row for row in rows if row.get("human") is not None and row.get("raters")]
    if not any(len(row["raters"]) > 1 for row in labelled):
        return None
    import numpy as np

    table = annotator_table(labelled)
    rated = ~np.isnan(table)
    shared = [(rated[:, k] & (np.delete(rated, k, axis=1).any(axis=1))).sum() for k in range(table.shape[1])]
    kept = [k for k in range(table.shape[1]) if shared[k] >= 2]  # one who shares under 2 items has no correlation
    out: dict[str, Any] = {"annotators": len(kept), "left_out": table.shape[1] - len(kept),
                           "assumption": CEILING_ASSUMPTION}
    shared = table[:, kept][(rated[:, kept]).sum(axis=1) >= 2]  # an item with one rater compares no one
    try:
        ceiling = inter_annotator(shared)
        interval = ceiling_interval(shared, n_resamples=args.resamples, confidence=args.confidence, seed=args.seed)
    except ValueError as error:
        return {**out, "unavailable": str(error)}
    return {**out, "items": len(shared), "items_with_one_rater": int(rated[:, kept].any(axis=1).sum()) - len(shared),
            "mean": ceiling.mean, "interval": {name: dataclasses.asdict(e) for name, e in interval.items()},
            "per_annotator": {name: list(values) for name, values in ceiling.per_annotator.items()}}


def _comparison(judged: list[dict[str, Any]], args: argparse.Namespace) -> dict[str, Any]:
    """Which judge agrees best on the items every run scored, with a paired interval per pair."""
    from ..stats.correlation import too_few
    from ..stats.human_agreement import agreement_difference, statistic_value

    values = [{item["id"]: (item["judge"], item["human"], item.get("group")) for item in run["items"]}
              for run in judged]
    common = [key for key in values[0] if all(key in other for other in values[1:])]
    out: dict[str, Any] = {"statistic": args.statistic, "items": len(common)}
    few = too_few(len(common), "items every run scored")
    if few is not None:
        return {**out, "unavailable": few}
    human = [values[0][key][1] for key in common]
    groups = [values[0][key][2] for key in common] if all(values[0][key][2] is not None for key in common) else None
    scores = [[run_values[key][0] for key in common] for run_values in values]
    try:
        out["values"] = {run["name"]: statistic_value(s, human, args.statistic) for run, s in zip(judged, scores)}
        out["pairs"] = []
        for i, j in itertools.combinations(range(len(judged)), 2):
            diff = agreement_difference(scores[i], scores[j], human, statistic=args.statistic, groups=groups,
                                        n_resamples=args.resamples, confidence=args.confidence, seed=args.seed)
            out["pairs"].append({"a": judged[i]["name"], "b": judged[j]["name"], **dataclasses.asdict(diff)})
    except ValueError as error:
        return {**out, "unavailable": str(error)}
    best = max(out["values"], key=out["values"].get)
    out["best"] = best
    out["clear"] = all((pair["low"] > 0) if pair["a"] == best else (pair["high"] < 0)
                       for pair in out["pairs"] if best in (pair["a"], pair["b"]))
    return out


def run_agreement(args: argparse.Namespace) -> int:
    """Join, measure, compare; write agreement.json and report.html, and print the headline."""
    from ..outputs import json_text, without_negative_zero
    from ..reports.agreement import set_statistics_line, write_agreement_report

    from ..stats.swap import EXACT_BELOW
    from .preflight import require_out_folder
    from .resampling import check_resampling_flags

    if len(args.inputs) < 2:
        raise CommandError("give one or more RUN.jsonl files, then the human labels")
    check_resampling_flags(args)
    require_out_folder(args.out, "agreement.json and report.html")
    human_path = Path(args.inputs[-1])
    runs = _load_runs([Path(p) for p in args.inputs[:-1]])
    rows, protocol, method, left_out = _human_rows(args, human_path, runs)
    _scores_in_range(runs, method)
    if left_out:
        print(f"left out {left_out} label line(s) of another method than {method} (--skip-other-labels)",
              file=sys.stderr)
    judged = [_judge_run(run, rows, protocol, human_path, args) for run in runs]
    result = {"method": method, "human": {"path": str(human_path), "format": args.human_format, "items": len(rows),
                                          "other_method_lines_left_out": left_out},
              "settings": {"resamples": args.resamples, "confidence": args.confidence, "seed": args.seed},
              "axes": {"human": protocol.human_axis, "judge": protocol.judge_axis},
              "runs": judged, "ceiling": _ceiling(rows, args),
              "comparison": _comparison(judged, args) if len(judged) > 1 else None}
    result = without_negative_zero(result)  # minus an error count of 0 is no negative number
    args.out.mkdir(parents=True, exist_ok=True)
    summary = args.out / "agreement.json"
    summary.write_text(json_text(result, str(summary), indent=2) + "\n", encoding="utf-8")
    page = write_agreement_report(result, args.out, dpi=args.dpi)
    for run in result["runs"]:
        rho = run["statistics"][args.statistic]
        shown = rho["reason"] if rho["value"] is None else f"{rho['value']:.3f} [{rho['low']:.3f}, {rho['high']:.3f}]"
        print(f"{run['name']}: {args.statistic} {shown} over {run['matched']} items"
              + (f" (under {EXACT_BELOW} items: the interval is unreliable)" if run["unreliable"] and
                 rho["value"] is not None else ""))
        if run["set_statistics"]:
            print(set_statistics_line(run))
    ceiling = result["ceiling"]
    if ceiling and "interval" in ceiling:
        shown = ceiling["interval"][args.statistic] if args.statistic in ceiling["interval"] else \
            ceiling["interval"]["spearman"]
        print(f"human ceiling ({ceiling['annotators']} annotators, {ceiling['items']} items): "
              f"{args.statistic if args.statistic in ceiling['interval'] else 'spearman'} {shown['value']:.3f} "
              f"[{shown['low']:.3f}, {shown['high']:.3f}]; {ceiling['assumption']}")
    comparison = result["comparison"]
    if comparison and "best" in comparison:
        verdict = "clearly (every paired interval excludes 0)" if comparison["clear"] else \
            "but not clearly (some paired interval includes 0)"
        print(f"best judge: {comparison['best']}, {verdict}")
    print(f"wrote {summary}\nwrote {page}")
    return 0
