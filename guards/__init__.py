"""guards: the metric guard, validity rules and dispositions, pure over a cell's artifacts."""
