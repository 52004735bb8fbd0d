#!/bin/sh
# the capture (until SIGINT) on host cap1, as ladder.yml runs them (each inside
# python3 -m lab.bare.at START_NS END_NS, on the capture host's clock). For reading.
# capture
env PYTHONPATH=/opt/xdp-bfd-lab /usr/bin/python3 -m lab.nic.hwstamp capture enp2s0 /var/lib/xdp-bfd-lab/run/capture.pcap
