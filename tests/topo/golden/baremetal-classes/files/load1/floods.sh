#!/bin/sh
# flood arms of each ladder step on host load1, as ladder.yml runs them (each inside
# python3 -m lab.bare.at START_NS END_NS, on the capture host's clock). For reading.
# flood-A
env PYTHONPATH=/opt/xdp-bfd-lab /usr/bin/python3 -m lab.bare.flood A enp1s0 5 --pps 50000 --load-addr 10.77.255.254 --stranger 10.77.255.253 --target engine=10.77.0.1,10.77.1.1 --target bfdd=10.77.2.1,10.77.1.1 --out /var/lib/xdp-bfd-lab/run/flood-flood-A-0-A.json
# flood-B
env PYTHONPATH=/opt/xdp-bfd-lab /usr/bin/python3 -m lab.bare.flood B enp1s0 5 --pps 50000 --load-addr 10.77.255.254 --stranger 10.77.255.253 --target engine=10.77.0.1,10.77.1.1 --target bfdd=10.77.2.1,10.77.1.1 --out /var/lib/xdp-bfd-lab/run/flood-flood-B-0-B.json
# flood-C
env PYTHONPATH=/opt/xdp-bfd-lab /usr/bin/python3 -m lab.bare.flood C enp1s0 5 --pps 50000 --load-addr 10.77.255.254 --stranger 10.77.255.253 --target engine=10.77.0.1,10.77.1.1 --target bfdd=10.77.2.1,10.77.1.1 --out /var/lib/xdp-bfd-lab/run/flood-flood-C-0-C.json
# flood-D
env PYTHONPATH=/opt/xdp-bfd-lab /usr/bin/python3 -m lab.bare.flood D enp1s0 5 --pps 50000 --load-addr 10.77.255.254 --stranger 10.77.255.253 --target engine=10.77.0.1,10.77.1.1 --target bfdd=10.77.2.1,10.77.1.1 --out /var/lib/xdp-bfd-lab/run/flood-flood-D-0-D.json
# flood-E
env PYTHONPATH=/opt/xdp-bfd-lab /usr/bin/python3 -m lab.bare.flood E enp1s0 5 --pps 50000 --load-addr 10.77.255.254 --stranger 10.77.255.253 --target engine=10.77.0.1,10.77.1.1 --target bfdd=10.77.2.1,10.77.1.1 --out /var/lib/xdp-bfd-lab/run/flood-flood-E-0-E.json
# flood-F
env PYTHONPATH=/opt/xdp-bfd-lab /usr/bin/python3 -m lab.bare.flood F enp1s0 5 --pps 50000 --load-addr 10.77.255.254 --stranger 10.77.255.253 --target engine=10.77.0.1,10.77.1.1 --target bfdd=10.77.2.1,10.77.1.1 --out /var/lib/xdp-bfd-lab/run/flood-flood-F-0-F.json
# flood-G
env PYTHONPATH=/opt/xdp-bfd-lab /usr/bin/python3 -m lab.bare.flood G enp1s0 5 --pps 50000 --load-addr 10.77.255.254 --stranger 10.77.255.253 --target engine=10.77.0.1,10.77.1.1 --target bfdd=10.77.2.1,10.77.1.1 --out /var/lib/xdp-bfd-lab/run/flood-flood-G-0-G.json
