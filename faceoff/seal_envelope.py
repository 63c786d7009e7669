"""A bundle's seal: a DSSE envelope over an in-toto Statement of every file and its sha256.

Sealing signs the statement with the operator's Ed25519 key; checking needs only a
``Trust``. ``check_seal`` is pure; ``verify_bundle_seal`` reads and hashes the bundle (every
entry, dot-files included, a link or special file named but never opened) and calls it;
it answers one ``SignatureCheck``:

- verified: a trusted key signed the statement and every file is as it lists;
- invalid: the envelope does not parse or verify, its signer is not trusted, or a file
  changed, vanished or appeared since (each named);
- unchecked: signed, but nothing was given to check it with (an HMAC seal without the secret,
  or an Ed25519 seal without ``--trust``), though its files still match the statement;
- stripped: no seal, but the bundle records a signer (``SignerClaim``: a signed receipt or
  review, the manifest's signer), so a seal was removed; or only an HMAC seal where the
  records name a key's fingerprint (a key's seal swapped for a shared secret's);
- unsigned: no seal and no record of one.

With both an envelope and an HMAC seal, the envelope decides (it covers every file).

A bundle sealed with HMAC (``SHA256SUMS.hmac``) stays readable: with the secret it verifies
as before, without it the check says it is HMAC-signed.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pydantic import ValidationError

from faceoff.artifact import first_error
from faceoff.bounded import SEAL_CAP, Entry, Unreadable, read_bytes, read_text, walk
from faceoff.canonical import file_sha256
from faceoff.dsse import Envelope, sign_envelope, verifying_keys
from faceoff.errors import FaceoffError
from faceoff.files import write_text_atomic
from faceoff.formats.seal_statement import (
    IN_TOTO_PAYLOAD_TYPE,
    SealPredicate,
    Statement,
    seal_statement,
)
from faceoff.keys import SigningKey
from faceoff.signing import signature_problem
from faceoff.trust import ED25519, HMAC, HMAC_SIGNER, Problem, SignatureCheck, Trust
from faceoff.trust import SignatureState as State

NOT_REGULAR = "not a regular file"  # the digest of an entry that is never opened (a FIFO, a link)


@dataclass(frozen=True)
class SignerClaim:
    """A record in the bundle that says it was signed, and by whom."""

    source: str  # the file (and field) that records it
    signer: str  # a fingerprint, or HMAC_SIGNER


@dataclass(frozen=True)
class SealFiles:
    """What the bundle holds of its seal, as read from disk."""

    envelope_name: str  # the envelope's file name, for problems
    envelope: str | None = None  # its text; None when absent
    hmac_name: str = ""
    hmac_signature: str | None = None  # the HMAC seal's text; None when absent
    sums_sha256: str | None = None  # sha256 of the sums file the HMAC signs


@dataclass(frozen=True)
class SealRef:
    """A seal as the campaign's chain names it: the sha256 of its envelope's bytes, and its
    number (1 for a seal of the first format, which had none)."""

    sha256: str
    sequence: int


@dataclass(frozen=True)
class SealChain:
    """Where a new seal stands in its campaign's chain."""

    sealed_at: datetime
    previous: SealRef | None = None  # the seal it replaces; None for the first

    def fields(self) -> dict[str, object]:
        previous = self.previous
        sequence = 1 if previous is None else previous.sequence + 1
        supersedes = None if previous is None else previous.sha256
        return {"sequence": sequence, "sealed_at": self.sealed_at, "supersedes": supersedes}


def seal_envelope(
    key: SigningKey,
    files: Mapping[str, str],
    *,
    campaign: str,
    matrix_id: str,
    sealed: str,
    chain: SealChain | None = None,
) -> Envelope:
    """The signed statement over ``files`` (path relative to the bundle -> sha256)."""
    predicate = SealPredicate.model_validate({
        "campaign": campaign, "matrix_id": matrix_id, "sealed": sealed,
        "signer": key.fingerprint, **(chain.fields() if chain else {}),
    })  # fmt: skip
    statement = seal_statement(files, predicate)
    return sign_envelope(key, IN_TOTO_PAYLOAD_TYPE, statement.payload())


def check_seal(
    seal: SealFiles,
    files: Mapping[str, str],
    trust: Trust,
    claims: Sequence[SignerClaim] = (),
) -> SignatureCheck:
    """What the seal proves of ``files`` (every file now in the bundle -> its sha256)."""
    if seal.envelope is not None:
        return _check_envelope(seal.envelope_name, seal.envelope, files, trust)
    by_key = [claim for claim in claims if claim.signer != HMAC_SIGNER]
    if seal.hmac_signature is not None and not by_key:
        return _check_hmac(seal, trust.hmac_key)
    missing = by_key if seal.hmac_signature is not None else list(claims)
    if missing:
        problems = tuple(_stripped(seal, claim) for claim in missing)
        return SignatureCheck(State.STRIPPED, signer=missing[0].signer, problems=problems)
    return SignatureCheck(State.UNSIGNED)


def _stripped(seal: SealFiles, claim: SignerClaim) -> Problem:
    name = seal.hmac_name if claim.signer == HMAC_SIGNER else seal.envelope_name
    return Problem(name, f"missing, although {claim.source} records a signature by {claim.signer}")


def _check_envelope(name: str, text: str, files: Mapping[str, str], trust: Trust) -> SignatureCheck:
    try:
        envelope = Envelope.model_validate_json(text)
        statement = _statement(envelope)
    except (ValidationError, ValueError) as exc:
        return _invalid(name, None, f"not a DSSE envelope of a faceoff seal: {_why(exc)}")
    claimed = statement.predicate.signer
    problems = _file_problems(statement.files(), files)
    if not envelope.signatures:  # nothing to check, with a key or without: not signed at all
        problems.insert(0, Problem(name, "its list of signatures is empty: nobody signed it"))
    if not trust.keys:
        state = State.INVALID if problems else State.UNCHECKED
        return SignatureCheck(state, ED25519, claimed, tuple(problems))
    signers = verifying_keys(envelope, list(trust.keys))
    if not signers:
        problems.insert(0, Problem(name, f"no trusted key verifies it (it names {claimed})"))
    elif claimed not in {k.fingerprint for k in signers}:
        mismatch = f"signed by {signers[0].fingerprint}, but its statement names {claimed}"
        problems.insert(0, Problem(name, mismatch))
    state = State.INVALID if problems else State.VERIFIED
    return SignatureCheck(state, ED25519, claimed, tuple(problems))


def _statement(envelope: Envelope) -> Statement:
    if envelope.payload_type != IN_TOTO_PAYLOAD_TYPE:
        raise ValueError(f"payloadType is {envelope.payload_type!r}, not {IN_TOTO_PAYLOAD_TYPE}")
    return Statement.model_validate_json(envelope.payload_bytes())


def _file_problems(sealed: Mapping[str, str], present: Mapping[str, str]) -> list[Problem]:
    """Every file changed, missing or added since the statement listed them."""
    problems = []
    for name in sorted(sealed.keys() | present.keys()):
        was, now = sealed.get(name), present.get(name)
        if was is None:
            problems.append(Problem(name, "present but not in the signed statement"))
        elif now is None:
            problems.append(Problem(name, "in the signed statement but missing"))
        elif now == NOT_REGULAR:
            problems.append(Problem(name, "a link or special file now, not the signed file"))
        elif was != now:
            changed = f"sha256 is {now[:12]}…, the signed statement says {was[:12]}…"
            problems.append(Problem(name, changed))
    return problems


def _check_hmac(seal: SealFiles, key: bytes | None) -> SignatureCheck:
    if key is None:
        return SignatureCheck(State.UNCHECKED, HMAC, HMAC_SIGNER)
    signature = (seal.hmac_signature or "").strip()
    problem = signature_problem(key, seal.sums_sha256 or "", signature)
    if problem is not None:
        return _invalid(seal.hmac_name, HMAC, problem)
    return SignatureCheck(State.VERIFIED, HMAC, HMAC_SIGNER)


def _invalid(name: str, scheme: str | None, what: str) -> SignatureCheck:
    return SignatureCheck(State.INVALID, scheme, problems=(Problem(name, what),))


def _why(exc: Exception) -> str:
    return first_error(exc) if isinstance(exc, ValidationError) else str(exc)


@dataclass(frozen=True)
class SealLayout:
    """Where a bundle keeps its sums and seal, by name relative to its root."""

    envelope: str  # the DSSE envelope
    hmac: str  # the HMAC seal of bundles signed with a shared secret
    sums: str  # the sums file the HMAC signs
    # Run locks: in the folder, not in the bundle, while they hold no more than a run's pid
    apart: tuple[str, ...] = ()


EMPTY_FOLDER = hashlib.sha256(b"").hexdigest()  # an empty folder's digest, its name ending '/'
LOCK_TEXT = re.compile(rb"\d{0,20}\n?")  # what a run lock holds: its holder's pid, or nothing


def bundle_files(
    root: Path, layout: SealLayout, digest_of: Callable[[Path], str] = file_sha256
) -> dict[str, str]:
    """Path (relative to ``root``) -> sha256 of every entry under it but the seal itself:
    dot-files included, a link or special file included but never opened, an empty folder
    as ``name/``, a run lock that holds more than a pid, and an HMAC seal beside the
    envelope (a seal no one checks would pass unseen)."""
    root = Path(root)
    entries = sorted(walk(root), key=lambda e: e.name)
    parents = {e.name.rpartition("/")[0] for e in entries}
    seal_apart, found = _seal_apart(root, layout), {}
    for entry in entries:
        if entry.name in seal_apart or _plain_lock(root, entry, layout):
            continue
        if entry.kind == "dir" and entry.problem is None:
            if entry.name not in parents:
                found[f"{entry.name}/"] = EMPTY_FOLDER
            continue
        regular = entry.kind == "file" and entry.problem is None
        found[entry.name] = digest_of(root / entry.name) if regular else NOT_REGULAR
    return found


def _seal_apart(root: Path, layout: SealLayout) -> set[str]:
    """The seal's own files: the envelope, else the HMAC seal of an older bundle."""
    return {layout.envelope} if os.path.lexists(root / layout.envelope) else {layout.hmac}


def _plain_lock(root: Path, entry: Entry, layout: SealLayout) -> bool:
    if entry.name not in layout.apart or entry.kind != "file":
        return False
    try:
        return LOCK_TEXT.fullmatch(read_bytes(root / entry.name, 64)) is not None
    except FaceoffError:  # over 64 bytes: more than a lock
        return False


def read_seal_files(root: Path, layout: SealLayout, sums_sha256: str | None) -> SealFiles:
    """The seal files of the bundle at ``root``, as ``check_seal`` takes them.

    ``sums_sha256``: the sums file's sha256, which an HMAC seal signs (None without it)."""
    return SealFiles(
        envelope_name=layout.envelope,
        envelope=_text(Path(root) / layout.envelope),
        hmac_name=layout.hmac,
        hmac_signature=_text(Path(root) / layout.hmac),
        sums_sha256=sums_sha256,
    )


def verify_bundle_seal(
    root: Path,
    layout: SealLayout,
    trust: Trust,
    claims: Sequence[SignerClaim] = (),
    digest_of: Callable[[Path], str] = file_sha256,
) -> SignatureCheck:
    """The seal of the bundle at ``root`` checked with ``trust``: what a command that would
    sign the bundle again, and the audit, call first."""
    files = bundle_files(root, layout, digest_of)
    sums = files.get(layout.sums)
    seal = read_seal_files(root, layout, None if sums == NOT_REGULAR else sums)
    return check_seal(seal, files, trust, claims)


def seal_bundle(
    root: Path,
    layout: SealLayout,
    key: SigningKey,
    *,
    campaign: str,
    matrix_id: str,
    sealed: str,
    chain: SealChain | None = None,
) -> Path:
    """Sign every file of the bundle (the sums included, written first) under ``key``."""
    files = bundle_files(root, layout)
    envelope = seal_envelope(key, files, campaign=campaign, matrix_id=matrix_id, sealed=sealed,
                             chain=chain)  # fmt: skip
    return write_envelope(Path(root) / layout.envelope, envelope)


def seal_ref(path: Path) -> SealRef | None:
    """The seal in the envelope at ``path`` as its chain names it; None when there is none
    or it cannot be read."""
    predicate = sealed_predicate(path)
    return None if predicate is None else SealRef(file_sha256(path), predicate.sequence or 1)


def sealed_predicate(path: Path) -> SealPredicate | None:
    """What the envelope at ``path`` says it seals (unverified); None when unreadable."""
    try:
        envelope = Envelope.model_validate_json(read_bytes(path, SEAL_CAP))
        return _statement(envelope).predicate
    except (OSError, FaceoffError, ValidationError, ValueError):
        return None


def _text(path: Path) -> str | None:
    """The file's text; None when it is absent. A link, a special file or a file over the
    cap in its place is read as an empty seal, which does not verify."""
    if not path.exists() and not path.is_symlink():
        return None
    try:
        return read_text(path, SEAL_CAP)
    except Unreadable:
        return ""


def write_envelope(path: Path, envelope: Envelope) -> Path:
    """Write (or replace) the seal atomically."""
    return write_text_atomic(path, envelope.to_json(), replace=True)
