"""guards: the metric guard, validity rules and dispositions, pure over a cell's artifacts."""

# What other packages may import (the import contract holds them to it).
__all__ = ["dispositions", "host_stall", "judge", "validity"]
