"""The card's quality section: imported evaluator results, their hashes, each band's verdict.
The same concept at another layer: ``evidence.comparison.quality``, ``matrix.quality``.

Renders ``comparison.json``'s ``quality``; computes nothing. A candidate with a check
outside its band, or whose metric could not be read, is declared not promotable here,
with the metric named, whatever its speed.
"""

from __future__ import annotations

from evidence.views.card.markdown import Sources
from faceoff.formats.bundle.comparison import Comparison
from faceoff.formats.bundle.quality_results import QualityCheck, QualityResult

NONE = "No quality evidence was imported (`[[quality]]` in the matrix)."


def quality(c: Comparison, sources: Sources) -> str:
    if not c.quality:
        return NONE
    verdicts = [_verdict(c, arm) for arm in (a.name for a in c.arms[1:])]
    return "\n\n".join(["\n".join(v for v in verdicts if v)] + [
        _import(r, sources) for r in c.quality
    ])  # fmt: skip


def _verdict(c: Comparison, arm: str) -> str:
    checks = [k for r in c.quality for k in r.checks if k.candidate == arm]
    if not checks:
        return ""
    outside = [k.metric for k in checks if k.within is False]
    unread = [k.metric for k in checks if k.within is None]
    if not outside and not unread:
        return f"- {arm}: every quality metric is inside its band."
    words = []
    if outside:
        words.append(f"outside its band on {', '.join(outside)}")
    if unread:
        words.append(f"no readable value of {', '.join(unread)}")
    return f"- **{arm}: not promotable** — {'; '.join(words)}."


def _import(r: QualityResult, sources: Sources) -> str:
    ref = sources.ref(f"quality[{r.name}]", [f.path for f in r.files])
    files = "; ".join(
        f"{f.arm}: `{f.path}` sha256 {f.sha256[:16] + '…' if f.sha256 else 'missing'}"
        + (f" ({f.problem})" if f.problem else "")
        for f in r.files
    )
    lines = [f"**{r.name}** ({r.evaluator}) {ref}. Files: {files}."]
    lines += [f"- {_mark(k)} {k.sentence}." for k in r.checks]
    return "\n".join(lines)


def _mark(k: QualityCheck) -> str:
    return {True: "within:", False: "OUTSIDE:", None: "unread:"}[k.within]
