"""The terminal the program runs in: streams, width, colour (an injected `Environment`)."""
