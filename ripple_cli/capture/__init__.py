"""Captures: pcap/pcapng files and live packets, reassembled into the byte
streams of TCP connections (one per direction) that the codec core decodes.

    events.py      what every capture source yields (StreamStart/Data/Gap/End, CaptureNote)
    community_id.py  a connection's Community ID (v1 flow hash), for every output that shows one
    formats.py     pcap, pcapng or a raw stream, from the first bytes
    pcapfile.py    pcap and pcapng records as (time_ns, link type, frame), streaming
    packets.py     a frame to its TCP segment, by link type (struct, the hot path)
    reassembly.py  TCP reassembly: segments to stream events
    reader.py      capture_events(): a capture file or pipe to stream events
    pcapng_writer.py  writing pcapng, with rotation (the tap's -w)
"""
