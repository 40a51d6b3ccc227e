"""What is learnt from decoded items, whatever their protocol: the -Y filter,
--type/--output/--key, the Report that owns the exit code, verify's sink."""
