"""The bundle's seal: ``SHA256SUMS`` and the operator's signature over it, checked before
anything signs the bundle again.

A command that seals (closing a run, a review, a restoration, a resume) first proves the
bundle intact and its signature valid with the credentials it has; a bundle whose
signature cannot be verified is never signed again, so a forgery never becomes signed
evidence, and a command without a key never removes a signature. The signature is the
Ed25519 envelope (``SEAL.dsse.json``) with a key file, else the HMAC of ``SHA256SUMS``
with the shared secret of older bundles; the signed receipt, reviews and the manifest's
``signer`` are the bundle's own record that it was signed (docs/evidence.md, "The seal").
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from evidence.folder.layout import (
    ENVELOPE_FILE,
    LIFTED_SEAL,
    SEAL_FILE,
    SEAL_LAYOUT,
    SUMS_FILE,
    CampaignFolder,
)
from evidence.folder.sums import SHOWN, verify_sums, write_sums
from faceoff.bounded import Unreadable, loads, read_json, read_lines, read_text
from faceoff.canonical import file_sha256
from faceoff.credentials import Credentials
from faceoff.errors import FaceoffError
from faceoff.files import write_text_atomic
from faceoff.formats.bundle.manifest import MANIFEST_FILE
from faceoff.formats.bundle.reviews import REVIEWS_FILE
from faceoff.formats.receipt import RECEIPT_FILE
from faceoff.ports import Clock
from faceoff.seal_envelope import (
    SealChain,
    SealRef,
    SignerClaim,
    seal_bundle,
    seal_ref,
    verify_bundle_seal,
)
from faceoff.signing import sign
from faceoff.trust import HMAC_SIGNER, SignatureCheck
from faceoff.trust import SignatureState as State


def seal(
    folder: CampaignFolder,
    credentials: Credentials,
    *,
    campaign: str,
    matrix_id: str,
    now: Clock = lambda: datetime.now(UTC),
) -> Path:
    """Write ``SHA256SUMS`` over every file and sign the bundle: the Ed25519 envelope with a
    key, naming the seal it replaces (``current_seal``), else the HMAC of the sums with the
    shared secret. Returns the sums' path."""
    chain = SealChain(sealed_at=now(), previous=current_seal(folder))
    folder.path(LIFTED_SEAL).unlink(missing_ok=True)
    path = write_sums(folder)
    for stale in (ENVELOPE_FILE, SEAL_FILE):
        folder.path(stale).unlink(missing_ok=True)
    if credentials.key is not None:
        seal_bundle(folder.root, SEAL_LAYOUT, credentials.key, campaign=campaign,
                    matrix_id=matrix_id, sealed="bundle", chain=chain)  # fmt: skip
    elif credentials.hmac is not None:
        signature = sign(credentials.hmac, file_sha256(path)) + "\n"
        write_text_atomic(folder.path(SEAL_FILE), signature, replace=True)
    return path


def lift_seal(folder: CampaignFolder) -> None:
    """Remove the sums and the signature before a run adds to a proven bundle, keeping the
    lifted seal's place in the chain (``LIFTED_SEAL``) for the seal that closes it again."""
    lifted = seal_ref(folder.path(ENVELOPE_FILE))
    if lifted is not None:
        write_text_atomic(folder.path(LIFTED_SEAL), f"{lifted.sha256} {lifted.sequence}\n",
                          replace=True)  # fmt: skip
    for name in (SUMS_FILE, SEAL_FILE, ENVELOPE_FILE):
        folder.path(name).unlink(missing_ok=True)


def current_seal(folder: CampaignFolder) -> SealRef | None:
    """The seal a new one replaces: the envelope in the bundle, else the one a run lifted."""
    found = seal_ref(folder.path(ENVELOPE_FILE))
    if found is not None:
        return found
    try:
        digest, sequence = read_text(folder.path(LIFTED_SEAL), 256).split()
        return SealRef(digest, int(sequence))
    except (OSError, FaceoffError, ValueError):
        return None


def seal_check(
    folder: CampaignFolder, credentials: Credentials, digest_of: Callable[[Path], str] = file_sha256
) -> SignatureCheck:
    """What the bundle's signature proves with these credentials' trust."""
    trust = credentials.trust
    return verify_bundle_seal(folder.root, SEAL_LAYOUT, trust, claims(folder), digest_of)


def require_verified(
    folder: CampaignFolder, credentials: Credentials, *, sealed: bool = False
) -> None:
    """Refuse to go on unless the bundle matches its ``SHA256SUMS`` and its signature
    verifies with ``credentials``: run before anything signs or rewrites the sums, so that
    a changed file is never hashed into them, and a forgery never signed.

    A folder without ``SHA256SUMS`` (a run not yet closed) passes unless ``sealed`` says
    it must be sealed (the ledger says the campaign closed: its seal was stripped). A bundle
    nobody signed passes only a command that cannot sign: one that can would vouch for
    files no one signed."""
    if not folder.path(SUMS_FILE).is_file() and not sealed:
        return
    problems = [f"{p.path} ({p.what})" for p in verify_sums(folder)]
    if problems:
        _refuse(folder, f"the bundle no longer matches its {SUMS_FILE}", problems)
    check = seal_check(folder, credentials)
    if check.verified or (check.state is State.UNSIGNED and not credentials.signs):
        return
    what = f"the bundle's signature does not verify ({check.state.value})"
    _refuse(folder, what, _said(check))


def _said(check: SignatureCheck) -> list[str]:
    if check.problems:
        return [p.line for p in check.problems]
    if check.state is State.UNSIGNED:
        return ["it was never signed; signing it now would vouch for files no one signed"]
    return [check.sentence]


def _refuse(folder: CampaignFolder, what: str, problems: list[str]) -> None:
    shown = "; ".join(problems[:SHOWN])
    more = f"; and {len(problems) - SHOWN} more" if len(problems) > SHOWN else ""
    raise FaceoffError(
        f"{what}, so it is not signed or rewritten: {shown}{more}",
        where=str(folder.root),
        fix="audit it (faceoff audit CAMPAIGN --trust PUBLIC_KEY lists every finding) and "
        "restore the bundle from a signed copy, or run with the key that signed it; "
        "nothing was written",
    )


def claims(folder: CampaignFolder) -> list[SignerClaim]:
    """What the bundle's own records say of its signature: the receipt's and each review's
    signature, and the manifest's signer. Read as plain JSON, so that even a record that no
    longer parses as its model still says it was signed."""
    found = [_claim(RECEIPT_FILE, _json(folder.receipt).get("signature"))]
    found.append(_claim(MANIFEST_FILE, _json(folder.path(MANIFEST_FILE)).get("signer")))
    for number, line in enumerate(_lines(folder.path(REVIEWS_FILE)), start=1):
        found.append(_claim(f"{REVIEWS_FILE} line {number}", line.get("signature")))
    return [c for c in found if c is not None]


def _claim(source: str, said: object) -> SignerClaim | None:
    if isinstance(said, dict) and isinstance(said.get("keyid"), str):
        return SignerClaim(f"{source}: signature", said["keyid"])
    if isinstance(said, str) and said:
        signer = said if said.startswith("sha256:") or said == HMAC_SIGNER else HMAC_SIGNER
        return SignerClaim(source, signer)
    return None


def _json(path: Path) -> dict[str, object]:
    """The record as plain JSON; {} for one that cannot be read (the audit's own read of
    it finds why: a FIFO, a file over its cap, JSON nested too deep)."""
    try:
        found = read_json(path)
    except (OSError, FaceoffError):
        return {}
    return found if isinstance(found, dict) else {}


def _lines(path: Path) -> list[dict[str, object]]:
    found: list[dict[str, object]] = []
    try:
        for number, line in read_lines(path):
            with contextlib.suppress(Unreadable):
                value = loads(line, f"{path} line {number}")
                found.append(value if isinstance(value, dict) else {})
    except (OSError, FaceoffError):
        pass  # what was read before the problem still claims; the audit finds the problem
    return found
