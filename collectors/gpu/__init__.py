"""The GPU: NVML and the simulator's virtual GPU behind one interface, the sampler, who owns
each GPU, its posture, its energy and its clock-event (throttle) reasons."""
