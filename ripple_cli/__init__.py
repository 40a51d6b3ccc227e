"""ripple: a tap and debugging tool for the Ripple wire protocol."""

__version__ = "0.1.0"
