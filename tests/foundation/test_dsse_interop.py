"""A seal faceoff writes, verified without faceoff: the DSSE spec's PAE recomputed here and
checked with pyca/cryptography, securesystemslib's DSSE verifier, `openssl pkeyutl`, and the
snippet docs/evidence.md gives for it."""

from __future__ import annotations

import base64
import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import load_pem_public_key
from securesystemslib.dsse import Envelope as SslibEnvelope
from securesystemslib.exceptions import VerificationError
from securesystemslib.signer import SSlibKey  # type: ignore[attr-defined]

from evidence.folder.layout import SEAL_LAYOUT
from faceoff.dsse import pae
from faceoff.keys import KeyPairFiles, init_key_pair, read_signing_key
from faceoff.record_signature import RECORD_PAYLOAD_TYPE, sign_record
from faceoff.seal_envelope import seal_bundle, seal_envelope

REPO = Path(__file__).resolve().parents[2]
FILES = {"MANIFEST.json": "a" * 64, "cells/x/inc/attempt-1/journal.jsonl": "b" * 64}


@pytest.fixture
def pair(tmp_path: Path) -> KeyPairFiles:
    return init_key_pair(tmp_path / "keys")


@pytest.fixture
def envelope(pair: KeyPairFiles) -> dict[str, Any]:
    key = read_signing_key(pair.private)
    sealed = seal_envelope(key, FILES, campaign="c", matrix_id="m1", sealed="bundle at close")
    return dict(json.loads(sealed.to_json()))


def public_key(pair: KeyPairFiles) -> Ed25519PublicKey:
    """The .pub file read by pyca/cryptography alone."""
    key = load_pem_public_key(pair.public.read_bytes())
    assert isinstance(key, Ed25519PublicKey)
    return key


def spec_pae(payload_type: str, payload: bytes) -> bytes:
    """PAE as the DSSE spec (protocol.md) writes it, independently of faceoff.dsse."""
    kind = payload_type.encode()
    return b" ".join(
        [b"DSSEv1", str(len(kind)).encode(), kind, str(len(payload)).encode(), payload]
    )


def test_pae_is_the_spec_s_encoding() -> None:
    # The DSSE spec's own example.
    assert pae("http://example.com/HelloWorld", b"hello world") == (
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )
    assert pae("application/vnd.in-toto+json", "é".encode()) == spec_pae(
        "application/vnd.in-toto+json", "é".encode()
    )


def test_the_envelope_is_an_in_toto_statement_of_every_file(
    envelope: dict[str, Any], pair: KeyPairFiles
) -> None:
    assert envelope["payloadType"] == "application/vnd.in-toto+json"
    statement = json.loads(base64.b64decode(envelope["payload"]))
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    assert statement["subject"] == [
        {"name": name, "digest": {"sha256": digest}} for name, digest in sorted(FILES.items())
    ]
    assert statement["predicateType"] == "urn:faceoff:bundle-seal:v1"
    assert statement["predicate"] == {
        "schema_version": 2,
        "campaign": "c",
        "matrix_id": "m1",
        "sealed": "bundle at close",
        "signer": pair.fingerprint,
        "sequence": None,  # a seal outside a campaign's chain (sealing a bundle passes one)
        "sealed_at": None,
        "supersedes": None,
    }
    [signature] = envelope["signatures"]
    assert signature["keyid"] == pair.fingerprint


def test_pyca_cryptography_verifies_the_recomputed_pae(
    envelope: dict[str, Any], pair: KeyPairFiles
) -> None:
    public = public_key(pair)
    payload = base64.b64decode(envelope["payload"])
    [signature] = envelope["signatures"]
    sig = base64.b64decode(signature["sig"])

    public.verify(sig, spec_pae(envelope["payloadType"], payload))
    with pytest.raises(InvalidSignature):
        public.verify(sig, spec_pae(envelope["payloadType"], payload + b" "))


def test_securesystemslib_verifies_the_envelope(
    envelope: dict[str, Any], pair: KeyPairFiles
) -> None:
    key = SSlibKey.from_crypto(public_key(pair), keyid=pair.fingerprint)

    accepted = SslibEnvelope.from_dict(copy.deepcopy(envelope)).verify([key], 1)
    assert list(accepted) == [pair.fingerprint]
    statement = json.loads(base64.b64decode(envelope["payload"]))
    statement["subject"][0]["digest"]["sha256"] = "c" * 64
    forged = dict(
        copy.deepcopy(envelope), payload=base64.b64encode(json.dumps(statement).encode()).decode()
    )
    with pytest.raises(VerificationError):
        SslibEnvelope.from_dict(forged).verify([key], 1)


def test_openssl_verifies_a_record_signature_over_the_pae(
    pair: KeyPairFiles, tmp_path: Path
) -> None:
    digest = "d" * 64
    signature = sign_record(read_signing_key(pair.private), digest)
    message, sig = tmp_path / "pae.bin", tmp_path / "sig.bin"
    message.write_bytes(spec_pae(RECORD_PAYLOAD_TYPE, digest.encode()))
    sig.write_bytes(base64.b64decode(signature.sig))
    verify = ["openssl", "pkeyutl", "-verify", "-pubin", "-inkey", str(pair.public), "-rawin"]
    verify += ["-in", str(message), "-sigfile", str(sig)]

    ok = subprocess.run(verify, capture_output=True, text=True, check=False)
    assert ok.returncode == 0 and "Signature Verified Successfully" in ok.stdout, ok.stderr
    message.write_bytes(spec_pae(RECORD_PAYLOAD_TYPE, ("e" * 64).encode()))
    assert subprocess.run(verify, capture_output=True, check=False).returncode != 0


def docs_snippet() -> str:
    """docs/evidence.md's Python that verifies a seal without faceoff."""
    text = (REPO / "docs" / "evidence.md").read_text()
    return text.split("With Python and pyca/cryptography alone:\n\n```python\n")[1].split("```")[0]


def test_the_documented_snippet_verifies_a_seal_and_catches_an_added_file(tmp_path: Path) -> None:
    bundle = tmp_path / "runs" / "sim-demo"
    (bundle / "cells" / "a").mkdir(parents=True)
    (bundle / "MANIFEST.json").write_text("{}\n")
    (bundle / "cells" / "a" / ".hidden").write_text("x\n")
    pair = init_key_pair(tmp_path)
    seal_bundle(bundle, SEAL_LAYOUT, read_signing_key(pair.private), campaign="c",
                matrix_id="m", sealed="bundle at close")  # fmt: skip
    script = tmp_path / "verify.py"
    script.write_text(docs_snippet())
    run = [sys.executable, str(script)]

    ok = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert ok.returncode == 0, ok.stderr
    (bundle / "APPROVAL.txt").write_text("approved\n")
    added = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert added.returncode != 0 and "AssertionError" in added.stderr
