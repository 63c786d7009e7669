"""NVML's clock-event (throttle) reasons: the bits of the mask, by name, and which slow a GPU down.

The mask is what ``nvmlDeviceGetCurrentClocksEventReasons`` returns (the values are
NVML's and do not change between drivers). A *slowdown* is a reason that lowers the
clocks below what the workload asked for because of heat or the board's power
delivery: hardware slowdown, software or hardware thermal slowdown, the power brake.
The software power cap is left out on purpose: a GPU under full load holds its power
limit routinely, and a recipe that draws more power is part of what is compared.
Idle, application-clock and sync-boost reasons say nothing about the GPU's health.
"""

from __future__ import annotations

from types import MappingProxyType

GPU_IDLE = 0x1
APPLICATIONS_CLOCKS_SETTING = 0x2
SW_POWER_CAP = 0x4
HW_SLOWDOWN = 0x8
SYNC_BOOST = 0x10
SW_THERMAL_SLOWDOWN = 0x20
HW_THERMAL_SLOWDOWN = 0x40
HW_POWER_BRAKE_SLOWDOWN = 0x80
DISPLAY_CLOCK_SETTING = 0x100

NAMES = MappingProxyType(
    {
        GPU_IDLE: "gpu_idle",
        APPLICATIONS_CLOCKS_SETTING: "applications_clocks_setting",
        SW_POWER_CAP: "sw_power_cap",
        HW_SLOWDOWN: "hw_slowdown",
        SYNC_BOOST: "sync_boost",
        SW_THERMAL_SLOWDOWN: "sw_thermal_slowdown",
        HW_THERMAL_SLOWDOWN: "hw_thermal_slowdown",
        HW_POWER_BRAKE_SLOWDOWN: "hw_power_brake_slowdown",
        DISPLAY_CLOCK_SETTING: "display_clock_setting",
    }
)
SLOWDOWN = HW_SLOWDOWN | SW_THERMAL_SLOWDOWN | HW_THERMAL_SLOWDOWN | HW_POWER_BRAKE_SLOWDOWN


def reason_names(mask: int) -> list[str]:
    """The named reasons set in ``mask``, lowest bit first; unknown bits as hex."""
    named = [name for bit, name in NAMES.items() if mask & bit]
    unknown = mask & ~sum(NAMES)
    return [*named, f"0x{unknown:x}"] if unknown else named


def slowed_down(mask: int) -> bool:
    """Whether ``mask`` holds a thermal or power-delivery slowdown."""
    return bool(mask & SLOWDOWN)
