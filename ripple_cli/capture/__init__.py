"""Captures: pcap/pcapng files and live packets, reassembled into the byte
streams of TCP connections (one per direction) that the codec core decodes."""
