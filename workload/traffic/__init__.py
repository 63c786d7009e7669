"""Traffic from files and shared prefixes: dataset and trace plans, their texts and rows, the
shared system prompts, and the sample files the examples ship."""
