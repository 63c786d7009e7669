"""Identity: is the lane serving the recipe the matrix names? A pure comparison.

Identity rests on what the running lane proves about itself: the image digest
Docker runs, the model id and root that ``/v1/models`` reports, the boot log's
``quantization=`` value, and the hash of the model directory's index/config
files. Never on a mount path's name: a mount called ``nvfp4`` may hold EXL3.

A field the matrix does not pin may be pinned by a baseline: the identity the
same arm showed earlier in the campaign, so a restored incumbent must be the one
that was measured.
"""

from __future__ import annotations

from faceoff.formats.lane import ExpectedIdentity, IdentityVerdict, Mismatch, ObservedIdentity
from matrix.arm import Arm


def expected_identity(arm: Arm, baseline: ObservedIdentity | None = None) -> ExpectedIdentity:
    """The arm's pins; unpinned root, quantization and weights come from the baseline."""
    root = arm.weights_manifest  # the directory we hash must be the one the engine loaded
    quantization = arm.expected_quantization
    weights = arm.expected_weights_sha256
    if baseline is not None:
        root = root or baseline.root_of(arm.served_model)
        quantization = quantization or _single(baseline.quantizations)
        weights = weights or baseline.weights_sha256
    return ExpectedIdentity(
        image=arm.image,
        served_model=arm.served_model,
        root=root,
        quantization=quantization,
        weights_sha256=weights,
    )


def judge_identity(
    arm: str, expected: ExpectedIdentity, observed: ObservedIdentity
) -> IdentityVerdict:
    mismatches = [
        m
        for m in (
            _image(expected, observed),
            _served_model(expected, observed),
            _root(expected, observed),
            _quantization(expected, observed),
            _weights(expected, observed),
        )
        if m is not None
    ]
    if not mismatches:
        return IdentityVerdict(ok=True)
    detail = "; ".join(m.sentence for m in mismatches)
    return IdentityVerdict(
        ok=False, mismatches=mismatches, reason=f"identity of arm {arm!r} does not match: {detail}"
    )


def _image(expected: ExpectedIdentity, observed: ObservedIdentity) -> Mismatch | None:
    if expected.image is None or observed.image == expected.image:
        return None
    return Mismatch(
        field="image",
        expected=expected.image,
        observed=observed.image or "no verified image",
        source="the running container",
    )


def _served_model(expected: ExpectedIdentity, observed: ObservedIdentity) -> Mismatch | None:
    ids = [m.id for m in observed.models]
    if expected.served_model in ids:
        return None
    return Mismatch(
        field="served_model",
        expected=repr(expected.served_model),
        observed=", ".join(repr(i) for i in ids) or "no models",
        source="/v1/models",
    )


def _root(expected: ExpectedIdentity, observed: ObservedIdentity) -> Mismatch | None:
    root = observed.root_of(expected.served_model)
    if (
        expected.root is None
        or root == expected.root
        or expected.served_model not in (m.id for m in observed.models)
    ):
        return None  # an absent model is already a served_model mismatch
    return Mismatch(
        field="root", expected=repr(expected.root), observed=repr(root), source="/v1/models"
    )


def _quantization(expected: ExpectedIdentity, observed: ObservedIdentity) -> Mismatch | None:
    if expected.quantization is None:
        return None
    seen = [q.lower() for q in observed.quantizations]
    if seen == [expected.quantization.lower()]:
        return None
    return Mismatch(
        field="quantization",
        expected=repr(expected.quantization),
        observed=", ".join(repr(q) for q in observed.quantizations) or "no quantization= line",
        source="the boot log",
    )


def _weights(expected: ExpectedIdentity, observed: ObservedIdentity) -> Mismatch | None:
    if expected.weights_sha256 is None or observed.weights_sha256 == expected.weights_sha256:
        return None
    return Mismatch(
        field="weights",
        expected=expected.weights_sha256,
        observed=observed.weights_sha256 or f"no manifest ({observed.weights_detail})",
        source="the weights manifest",
    )


def _single(values: list[str]) -> str | None:
    return values[0] if len(values) == 1 else None
