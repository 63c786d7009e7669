"""``faceoff keys init``: the operator's Ed25519 key pair, and how to use it.
The same concept at another layer: ``faceoff.keys``.
"""

from __future__ import annotations

from pathlib import Path

import typer

from faceoff.keys import SIGNING_KEY_FILE_ENV, init_key_pair


def init(out: Path) -> None:
    made = init_key_pair(out)
    typer.echo(f"private key: {made.private} (mode 0600; keep it on the campaign host only)")
    typer.echo(f"public key:  {made.public} ({made.fingerprint})")
    typer.echo(f"sign with it:   export {SIGNING_KEY_FILE_ENV}={made.private.resolve()}")
    typer.echo(f"audit with it:  faceoff audit CAMPAIGN --trust {made.public}")
