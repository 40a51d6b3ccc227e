"""What flows from the decoders to renderers and analyses: a message of any
protocol, or a problem.  Both message kinds have `offset`, `size` and
`type` (the type's name), which is all the generic code reads."""

from __future__ import annotations

from ripple_cli.codec.problems import Problem
from ripple_cli.codec.stream import Message
from ripple_cli.protocols.base import ProtoMessage

Decoded = Message | ProtoMessage
Item = Decoded | Problem
