"""Real simulator campaigns for ``benchmarks.sequential``: the sequential pipeline end to end.

    .venv/bin/python -m benchmarks sequential_real --real 1

Each campaign runs the demo's two sequential C1 cells (8192 and 31,600 input tokens, 4
requests a pass, ``max_passes = 3``) on two lanes of the ``exl3-r11`` simulator profile under
a TTFT p50 non-inferiority rule of 5 %, the candidate's ``time_scale`` set so that its times
are the planted ratio of the incumbent's (20 / ratio against 20). Printed per campaign: the
rule's outcome, the passes each cell ran, scored requests (both arms), lane-time (its
walks in ``passes.json``) and wall time; its lanes are torn down after it.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from faceoff.formats.bundle.comparison import Comparison
from faceoff.formats.passes import PassRecord
from flows.campaign.restore import restore_tools
from flows.prefect import server as ephemeral
from lanes.leftovers import teardown as stop_campaign_lanes

RATIOS = (1.00, 1.05, 0.90)
ARM = """
[[arms]]
name = "{name}"
role = "{role}"
lane = "simulator"
port = {port}
served_model = "glm-5.3-flash"
expected_quantization = "exl3"
warmups = 2
[arms.probes]
smoke_max_tokens = 256
[arms.simulator]
profile = "exl3-r11"
time_scale = {scale}
"""
MATRIX = """schema_version = 1
[campaign]
name = "{name}"
seed = {seed}
stop_policy = "continue"
{arms}
[[cells]]
kind = "natural"
input_tokens = [8192, 31600]
concurrency = 1
requests = 4
replicates = "auto"
max_passes = 3
deadline_s = 300
[cells.sampling]
max_tokens = 512
reasoning_effort = "max"

[rule]
[[rule.criteria]]
metric = "ttft_s"
non_inferiority = 0.05

[families.not_applicable]
gpu_memory = "simulator lanes run on hosts without GPUs"
"""


def matrix_text(name: str, seed: int, ratio: float) -> str:
    arms = ARM.format(name="inc", role="incumbent", port=18121, scale=20.0)
    arms += ARM.format(name="cand", role="candidate", port=18122, scale=round(20.0 / ratio, 6))
    return MATRIX.format(name=name, seed=seed, arms=arms)


def summary(bundle: Path, seconds: float) -> str:
    comparison = Comparison.read(bundle / "comparison.json")
    record = PassRecord.read(bundle / "passes.json")
    outcome = comparison.ruling.candidates[0].outcome if comparison.ruling else "no rule"
    cells = comparison.sequential.cells if comparison.sequential else []
    passes = ", ".join(f"{c.cell} {len(c.passes_run)}" for c in cells)
    requests = sum(a.planned for c in comparison.cells for a in c.arms if a.attempt is not None)
    lane_s = sum(
        (w.ended_at - w.started_at).total_seconds() for p in record.passes for w in p.walks
    )
    return (f"{outcome:<15} passes [{passes}]  requests {requests:>3}  lane-time {lane_s:5.1f} s  "
            f"wall {seconds:5.1f} s")  # fmt: skip


def real_campaigns(per_ratio: int, workdir: Path | None = None) -> None:
    folder = (workdir or Path(tempfile.mkdtemp(prefix="faceoff-seq-"))).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    ephemeral.apply_prefect_defaults(os.environ, folder, live_view=False)
    tools = restore_tools(os.environ)
    print(f"\nreal simulator campaigns ({per_ratio} per ratio) in {folder}")
    with ephemeral.ephemeral_server(os.environ, avoid={18121, 18122}):
        from flows.prefect.flow_runner import run_campaign  # noqa: PLC0415  (Prefect reads env at import)

        for ratio in RATIOS:
            for index in range(per_ratio):
                name = f"sim-seq-{round(ratio * 100)}-{index}"
                path = folder / f"{name}.toml"
                path.write_text(matrix_text(name, 7000 + index, ratio), encoding="utf-8")
                started = time.monotonic()
                result = run_campaign(path, folder)
                seconds = time.monotonic() - started
                stop_campaign_lanes(result.bundle, name, tools.now, tools.docker)
                print(f"  ratio {ratio:.2f} #{index}: {summary(result.bundle, seconds)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--real", type=int, default=1, help="campaigns per planted ratio")
    parser.add_argument("--workdir", type=Path, help="where the campaigns go (default: temp)")
    args = parser.parse_args()
    real_campaigns(args.real, args.workdir)


if __name__ == "__main__":
    main()
