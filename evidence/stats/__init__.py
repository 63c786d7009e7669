"""Statistics of samples and ratios: pure functions of numbers."""
