"""The GPU posture in the evidence: the campaign's snapshots of its hardware GPUs (start kept on
resume, end anew), each lane run's compared with the arm's run before it, and the card's GPU
posture section flagging what changed. NVML is the collectors' fake (no GPU here)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from collectors.gpu.posture import collect_gpu_posture
from evidence.views.card.markdown import Sources
from evidence.views.card.posture import gpu_posture
from faceoff.formats.bundle.comparison import Comparison
from faceoff.formats.gpu_posture import GPU_END_FILE, GPU_START_FILE
from faceoff.formats.host_posture import lane_postures, read_posture, with_lanes
from flows.campaign.gpu_posture import hardware_gpu_ids, record_campaign_gpus
from matrix.toml.reader import load_matrix
from tests.collectors.gpu.test_sampler import FakeDevice, FakeNvml
from tests.evidence.comparison.test_ruling import cell

EXAMPLES = Path(__file__).resolve().parents[4] / "matrix" / "examples"
LOWER = [
    "GPU 0 power_limit_w: 600.0 at the start, 450.0 at the end",
    "GPU 0 enforced_power_limit_w: 600.0 at the start, 450.0 at the end",
]


def now() -> datetime:
    return datetime(2026, 12, 4, tzinfo=UTC)


def boards(limit: float = 600.0) -> FakeNvml:
    return FakeNvml({0: FakeDevice(0, 1.0, power_limit=limit), 1: FakeDevice(1, 1.0)})


def test_the_campaign_records_its_hardware_gpus_at_the_start_and_the_end(tmp_path: Path) -> None:
    record_campaign_gpus(tmp_path, [0, 1], GPU_START_FILE, now, boards)
    record_campaign_gpus(tmp_path, [0, 1], GPU_START_FILE, now, lambda: boards(450.0))  # resume
    record_campaign_gpus(tmp_path, [0, 1], GPU_END_FILE, now, lambda: boards(450.0))
    view = read_posture(tmp_path)
    assert view is not None and view.start is None  # no host posture written here
    assert view.gpu_start is not None and view.gpu_start.devices[0].power_limit_w == 600.0
    assert view.gpu_changes == LOWER
    record_campaign_gpus(tmp_path / "none", [], GPU_START_FILE, now, boards)
    assert not (tmp_path / "none").exists()  # a campaign of simulator arms: no snapshot


def test_only_arms_on_hardware_name_the_campaigns_gpus() -> None:
    demo = load_matrix(EXAMPLES / "sim-faceoff.toml")
    assert [a.gpu_ids for a in demo.arms] == [[0, 1], [0, 1]]
    assert hardware_gpu_ids(demo) == []  # simulator arms: their lanes' virtual GPUs
    arms = [a.model_copy(update={"simulator": None}) for a in demo.arms]
    assert hardware_gpu_ids(demo.model_copy(update={"arms": arms})) == [0, 1]


def test_each_lane_run_is_compared_with_the_arms_run_before_and_the_card_flags_it() -> None:
    first = collect_gpu_posture(boards(), now, [0, 1])
    capped = collect_gpu_posture(boards(450.0), now, [0, 1])
    lanes = lane_postures([("inc", "lanes/inc/campaign-001", first),
                           ("cand", "lanes/cand/campaign-001", first),
                           ("inc", "lanes/inc/campaign-002", capped)])  # fmt: skip
    assert [x.changes for x in lanes] == [[], [], LOWER]
    view = with_lanes(None, lanes)
    assert view is not None and view.lanes == lanes and with_lanes(view, []) is view
    card = gpu_posture(comparison_with(view), Sources())
    rows = [line for line in card.splitlines() if line.startswith("| lanes/")]
    assert rows[0].endswith("| its first run |") and rows[1].endswith("| its first run |")
    assert "**changed**: GPU 0 power_limit_w: 600.0 at the start, 450.0" in rows[2]
    assert "| GPUs 0, 1 Fake RTX PRO 6000: limit 600 W, persistence on" in rows[0]  # alike
    assert "| GPU 0 Fake RTX PRO 6000: limit 450 W" in rows[2]  # no longer like GPU 1
    assert "; GPU 1 Fake RTX PRO 6000: limit 600 W" in rows[2]


def comparison_with(view: object) -> Comparison:
    """A comparison whose only content that matters is its posture."""
    entry = cell("a")
    return Comparison.model_construct(posture=view, cells=[entry])
