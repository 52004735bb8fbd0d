#!/bin/sh
# stress-ng of each ladder step on host dut1, as ladder.yml runs them (each inside
# python3 -m lab.bare.at START_NS END_NS, on the capture host's clock). For reading.
# L1
/usr/bin/time -a -o /var/lib/xdp-bfd-lab/run/stress-L1.log -f 'xdp-bfd-lab time: wall_s %e user_s %U sys_s %S rc %x' stress-ng --cpu 12 --timeout 20s --metrics-brief >> /var/lib/xdp-bfd-lab/run/stress-L1.log 2>&1
# L2
/usr/bin/time -a -o /var/lib/xdp-bfd-lab/run/stress-L2.log -f 'xdp-bfd-lab time: wall_s %e user_s %U sys_s %S rc %x' stress-ng --cpu 24 --switch 12 --yield 12 --timeout 20s --metrics-brief >> /var/lib/xdp-bfd-lab/run/stress-L2.log 2>&1
# L3
/usr/bin/time -a -o /var/lib/xdp-bfd-lab/run/stress-L3.log -f 'xdp-bfd-lab time: wall_s %e user_s %U sys_s %S rc %x' stress-ng --cpu 12 --timer 24 --timerfd 12 --hrtimers 6 --timeout 20s --metrics-brief >> /var/lib/xdp-bfd-lab/run/stress-L3.log 2>&1
# L4
/usr/bin/time -a -o /var/lib/xdp-bfd-lab/run/stress-L4.log -f 'xdp-bfd-lab time: wall_s %e user_s %U sys_s %S rc %x' stress-ng --cpu 12 --sched fifo --sched-prio 50 --timeout 20s --metrics-brief >> /var/lib/xdp-bfd-lab/run/stress-L4.log 2>&1
# L4-99
/usr/bin/time -a -o /var/lib/xdp-bfd-lab/run/stress-L4-99.log -f 'xdp-bfd-lab time: wall_s %e user_s %U sys_s %S rc %x' stress-ng --cpu 12 --sched fifo --sched-prio 99 --timeout 20s --metrics-brief >> /var/lib/xdp-bfd-lab/run/stress-L4-99.log 2>&1
