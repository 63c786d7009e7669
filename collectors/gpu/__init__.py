"""The GPU: NVML and the simulator's virtual GPU behind one interface, the sampler, who owns
each GPU, its posture, its energy and its clock-event (throttle) reasons."""

# What other packages may import (the import contract holds them to it).
__all__ = ["clock_events", "energy", "nvml", "posture", "virtual"]
