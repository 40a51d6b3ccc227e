"""From a source's events to decoded messages: one decoder (and one set of
stream rules) per stream direction."""
