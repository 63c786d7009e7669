"""Quality imports: evaluator result files the test writes, copied, hashed and judged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evidence.comparison.quality import copy_path, import_quality, quality_results, read_quality
from faceoff.canonical import file_sha256
from matrix.quality import QualityImport

INCUMBENT, CANDIDATE = "exl3", "nvfp4"


def lm_eval(acc_norm: float) -> dict[str, Any]:
    """The shape of lm-evaluation-harness's results JSON."""
    task = {"alias": "hellaswag", "acc_norm,none": acc_norm, "acc_norm_stderr,none": 0.004}
    return {"results": {"hellaswag": task}, "config": {"model": "local-chat-completions"}}


def tool_eval_bench(score: int, points: int) -> dict[str, Any]:
    return {"benchmark": "tool-eval-bench", "score": score, "points": points, "max_points": 176,
            "deployability": 77, "passed": True}  # fmt: skip


def write(folder: Path, name: str, doc: dict[str, Any]) -> str:
    path = folder / name
    path.write_text(json.dumps(doc))
    return str(path)


def imports(folder: Path) -> list[QualityImport]:
    entries = [
        ("hellaswag", "lm_eval", lm_eval(0.801), lm_eval(0.781),
         {"metric": "results/hellaswag/acc_norm,none", "tolerance": 0.01}),
        ("teb", "tool_eval_bench", tool_eval_bench(94, 166), tool_eval_bench(93, 165),
         {"metric": "score", "tolerance": 2}),
        ("kld", "kld", {"kld_mean": 0.0246}, {"kld_mean": 0.0251},
         {"metric": "kld_mean", "higher_is_better": False, "tolerance": 0.002}),
    ]  # fmt: skip
    return [
        QualityImport(
            name=name,
            evaluator=evaluator,
            results={
                INCUMBENT: write(folder, f"{name}-{INCUMBENT}.json", inc),
                CANDIDATE: write(folder, f"{name}-{CANDIDATE}.json", cand),
            },
            bands=[band],
        )
        for name, evaluator, inc, cand, band in entries
    ]


def test_a_metric_outside_its_band_is_named_and_the_others_pass(tmp_path: Path) -> None:
    operator, bundle = tmp_path / "operator", tmp_path / "bundle"
    operator.mkdir()
    entries = imports(operator)
    import_quality(bundle, entries)
    results = quality_results(entries, INCUMBENT, read_quality(bundle, entries))
    verdicts = {(r.name, k.metric): k for r in results for k in r.checks}
    hellaswag = verdicts[("hellaswag", "results/hellaswag/acc_norm,none")]
    assert hellaswag.within is False and "outside the band" in hellaswag.sentence
    assert round(hellaswag.shortfall or 0, 6) == 0.02
    assert verdicts[("teb", "score")].within is True
    assert verdicts[("kld", "kld_mean")].within is True  # lower is better, 0.0005 worse
    copy = copy_path(bundle, "hellaswag", CANDIDATE)
    assert results[0].files[1].sha256 == file_sha256(copy)


def test_the_bundle_keeps_its_copy_and_a_missing_file_is_unreadable(tmp_path: Path) -> None:
    operator, bundle = tmp_path / "operator", tmp_path / "bundle"
    operator.mkdir()
    entries = imports(operator)[:1]
    import_quality(bundle, entries)
    Path(entries[0].results[CANDIDATE]).write_text(json.dumps(lm_eval(0.9)))  # edited later
    import_quality(bundle, entries)
    kept = quality_results(entries, INCUMBENT, read_quality(bundle, entries))
    assert kept[0].checks[0].candidate_value == 0.781
    copy_path(bundle, "hellaswag", INCUMBENT).unlink()
    Path(entries[0].results[INCUMBENT]).unlink()
    missing = quality_results(entries, INCUMBENT, read_quality(bundle, entries))[0]
    assert missing.checks[0].within is None
    assert missing.files[0].sha256 is None and "no result file" in (missing.files[0].problem or "")
