"""Ripple's bytes, pure and free of I/O: the envelope and its CRC, framing
with resynchronisation, bin_prot, the payload types, schemas and their
values, the canonical text and the typed JSON, and the C module that does
the common case faster (fast/).  The Ripple dissector (protocols/ripple/)
builds on it."""
