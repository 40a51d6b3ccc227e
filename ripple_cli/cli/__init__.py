"""The command line: Click commands, each a short composition of sources,
the codec core, renderers and analyses."""
