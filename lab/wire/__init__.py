"""wire - the one builder of the bytes the lab and its tests put on a wire or a socket.

    frames  Ethernet (802.1Q/802.1ad tags), IPv4, IPv6, UDP and the Internet checksum (RFC 1071)
    bfd     BFD Control packets (RFC 5880 4.1, authentication 4.2-4.4) and Echo payloads
    bfddp   FRR bfdd's data-plane messages, version 1 (../shared/docs/bfddp.md, engine/bfddp.h)

Pure functions from fields to bytes: no I/O, no root, nothing imported from the rest of lab/.
"""
