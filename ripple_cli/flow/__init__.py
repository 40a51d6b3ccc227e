"""From a source's events to a sink: a protocol and a dissector per stream
(demux.py), a command's inputs (inputs.py), the pipeline (pipeline.py)."""
