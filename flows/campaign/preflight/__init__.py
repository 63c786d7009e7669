"""``faceoff preflight``: the campaign host checked before the night, touching no lane.

``catalog`` names the checks (``--waive`` takes these names); ``static`` judges what the
matrix alone shows (``faceoff validate`` prints those as warnings); the other modules look
at the host, each through the port it is given (NVML, Docker, HTTP, files, the ledger),
and judge what they saw with pure functions; ``host_checks`` puts the checklist together.
"""

__all__: list[str] = []  # what other packages may import: nothing
