"""The faceoff command line: argument parsing, one module per command, and views."""
