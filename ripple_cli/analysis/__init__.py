"""What is learnt from a stream of decoded messages: stream rules, counts."""
