"""Write the seed corpus of fuzz_bfdcap into corpus/bfdcap/ (committed; rerun after changing
the generators): whole captures in each format and link type, and bare frames whose first byte
picks the link type (see fuzz_bfdcap.c).

    PYTHONPATH=.:tests/capture /usr/bin/python3 tests/fuzz/make_corpus.py
"""

from __future__ import annotations

from pathlib import Path

import pcapgen as g
import zoo

HERE = Path(__file__).resolve().parent

T0 = 1_700_000_000_000_000_000


def main() -> None:
    out = HERE / "corpus" / "bfdcap"
    out.mkdir(parents=True, exist_ok=True)
    frames = zoo.frames()
    g.write_pcap(out / "zoo.pcap", frames)
    g.write_pcap(out / "zoo-us.pcap", frames[:20], nano=False)
    l3 = [g.ip_udp("192.0.2.1", "192.0.2.2", g.bfd(state=s, my=1, your=2))
          for s in ("Down", "Init", "Up", "Up", "Up")]
    l3b = [g.ip_udp("192.0.2.2", "192.0.2.1", g.bfd(state=s, my=2, your=1))
           for s in ("Init", "Up", "Up", "Down", "Up")]
    seq = []
    for i, (x, y) in enumerate(zip(l3, l3b)):
        seq += [(T0 + i * 10_000_000, x), (T0 + i * 10_000_000 + 40_000, y)]
    g.write_pcap(out / "sll2-flap.pcap", [(t, g.sll2(x)) for t, x in seq],
                 g.LINKTYPE_LINUX_SLL2)
    g.write_pcap(out / "raw.pcap", seq, g.LINKTYPE_RAW)
    (out / "mixed.pcapng").write_bytes(
        g.pcapng_section([(g.LINKTYPE_ETHERNET, 9), (g.LINKTYPE_LINUX_SLL, 0x80 | 20, 5)],
                         [(i % 2, t, g.ether(x) if i % 2 == 0 else g.sll(x))
                          for i, (t, x) in enumerate(seq)])
        + g.pcapng_section([(g.LINKTYPE_RAW, None)], [(0, T0, l3[0], "spb")],
                           big_endian=True))
    data = (out / "zoo.pcap").read_bytes()
    (out / "cut.pcap").write_bytes(data[:300])
    for i, (lt, wrap) in enumerate([(0, g.ether), (1, g.sll), (2, g.sll2), (3, lambda x: x)]):
        (out / f"bare-{i}").write_bytes(bytes([lt]) + wrap(l3[2]))


if __name__ == "__main__":
    main()
