"""The operator's credentials: what a command signs with and what it trusts.

Built once at an entry point from the environment (and a command's flags) and passed
down. A signer trusts its own public key; the HMAC secret of bundles signed before the
public-key seal both signs (when no key file is given) and verifies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from faceoff.keys import PublicKey, SigningKey, operator_signing_key
from faceoff.record_signature import RecordSignature, sign_record
from faceoff.signing import sign, signing_key
from faceoff.trust import HMAC_SIGNER, Trust, read_trust


@dataclass(frozen=True)
class Credentials:
    key: SigningKey | None = None  # the operator's Ed25519 key: signs seals and records
    hmac: bytes | None = field(default=None, repr=False)  # the shared secret of older bundles
    trusted: tuple[PublicKey, ...] = ()  # public keys named with --trust

    @property
    def trust(self) -> Trust:
        """What a signature may be verified with: the named keys, one's own, the secret."""
        return Trust(self.trusted, self.hmac).with_key(self.key)

    @property
    def signs(self) -> bool:
        return self.key is not None or self.hmac is not None

    @property
    def signer(self) -> str | None:
        """Who signs what this command seals: a fingerprint, the shared secret, or nobody."""
        if self.key is not None:
            return self.key.fingerprint
        return HMAC_SIGNER if self.hmac is not None else None

    def sign_record(self, digest: str) -> RecordSignature | str | None:
        """A record's signature of its content hash: Ed25519 with a key, else the HMAC."""
        if self.key is not None:
            return sign_record(self.key, digest)
        return sign(self.hmac, digest) if self.hmac is not None else None


NOBODY = Credentials()  # signs nothing and trusts no key


def credentials(
    environ: Mapping[str, str], *, key_file: Path | None = None, trust: Sequence[Path] = ()
) -> Credentials:
    """The operator's credentials: the key file a flag or ``FACEOFF_SIGNING_KEY_FILE`` names,
    the HMAC secret of ``FACEOFF_SIGNING_KEY``, and the public keys of ``trust`` files."""
    key = operator_signing_key(environ, key_file)
    return Credentials(key, signing_key(environ), read_trust(trust).keys)
