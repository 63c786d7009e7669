"""The campaign spec: arms, cells, thresholds, the decision rule and the metric-family
registry as pydantic models; the TOML read with grid expansion, frozen, and planned."""
