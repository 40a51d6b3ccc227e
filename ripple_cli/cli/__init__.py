"""The command line: Click commands, each a short composition of inputs,
the pipeline and a sink (ARCHITECTURE.md), with shared options and groups."""
