"""How long building and auditing a bundle take, against ``sha256sum -c`` in the same run.

    .venv/bin/python -m benchmarks.evidence_bundle CAMPAIGN_DIR [--rounds 5]

CAMPAIGN_DIR is a campaign folder a run left (e.g. ``runs/sim-faceoff`` after
``make demo``); it is copied, never changed. Each round rebuilds the bundle
(``write_bundle``), audits it (``audit_bundle``: hashes plus every recomputation)
and runs coreutils ``sha256sum -c SHA256SUMS`` on the same files as the peer that
only hashes. Prints medians and the ratios to the peer as one JSON line.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from collectors.inventory import PynvmlInventory, collect_host, collect_source
from evidence.audit.reverify import audit_bundle
from evidence.bundle.write import write_bundle

REPO = Path(__file__).resolve().parents[1]


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def no_docker() -> object:
    raise ConnectionError("not asked in the benchmark")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("campaign", type=Path)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    host, source = collect_host(PynvmlInventory(), no_docker), collect_source(REPO)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / args.campaign.name
        shutil.copytree(args.campaign, root)

        def build() -> object:
            return write_bundle(root, now=lambda: datetime.now(UTC), host=host, source=source)

        def peer() -> object:
            return subprocess.run(
                ["sha256sum", "--quiet", "-c", "SHA256SUMS"], cwd=root, check=True
            )

        build()
        times: dict[str, list[float]] = {"write_bundle": [], "audit_bundle": [], "sha256sum_c": []}
        for _ in range(args.rounds):
            times["write_bundle"].append(timed(build))
            times["audit_bundle"].append(timed(lambda: audit_bundle(root)))
            times["sha256sum_c"].append(timed(peer))
        files = sum(1 for p in root.rglob("*") if p.is_file())
        size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    medians = {k: statistics.median(v) for k, v in times.items()}
    peer_s = medians["sha256sum_c"]
    print(
        json.dumps(
            {
                "files": files,
                "bytes": size,
                "rounds": args.rounds,
                "median_s": {k: round(v, 4) for k, v in medians.items()},
                "ratio_to_sha256sum": {
                    k: round(v / peer_s, 1) for k, v in medians.items() if k != "sha256sum_c"
                },
            }
        )
    )


if __name__ == "__main__":
    main()
