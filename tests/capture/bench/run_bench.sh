#!/bin/sh
# bfdcap benchmark (not a test): packets per second on a generated capture of BENCH_PACKETS
# (default 10 million) BFD packets over BENCH_SESSIONS (default 1,000) sessions, and the ratio
# against the tshark-fields-plus-Python pipeline (tests/capture/bench/pipeline.py) on the same
# file's first BENCH_PREFIX (default 1 million) packets, in the same run. Files go to
# BENCH_DIR (default /tmp/bfdcap-bench), never into the repository.
#   sh tests/capture/bench/run_bench.sh
set -eu
cd "$(dirname "$0")/../../.."
DIR=${BENCH_DIR:-/tmp/bfdcap-bench}
N=${BENCH_PACKETS:-10000000}
S=${BENCH_SESSIONS:-1000}
P=${BENCH_PREFIX:-1000000}
RUNS=${BENCH_RUNS:-3}
mkdir -p "$DIR"
make --no-print-directory build/bfdcap >/dev/null
gcc -O2 -o "$DIR/gen_bfd_pcap" tests/capture/bench/gen_bfd_pcap.c
"$DIR/gen_bfd_pcap" "$DIR/bench.pcap" "$N" "$S"
# Same seed, fewer packets: exactly the first P packets of bench.pcap.
"$DIR/gen_bfd_pcap" "$DIR/prefix.pcap" "$P" "$S"
echo "capture: $N packets, $S sessions, $(stat -c %s "$DIR/bench.pcap") bytes; prefix $P packets"
echo "host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), load $(cut -d' ' -f1-3 /proc/loadavg)"

measure() { # label, command...: best of RUNS (wall, user+sys CPU), max RSS of the last run
	label=$1; shift
	: >"$DIR/times.txt"
	i=0
	while [ $i -lt "$RUNS" ]; do
		/usr/bin/time -f "%e %U %S %M" -o "$DIR/time.txt" "$@" >"$DIR/out.txt"
		cat "$DIR/time.txt" >>"$DIR/times.txt"
		i=$((i + 1))
	done
	awk -v l="$label" 'NR == 1 || $1 < w { w = $1 } NR == 1 || $2 + $3 < c { c = $2 + $3 }
		{ m = $4 } END { print l, w, c, m }' "$DIR/times.txt"
}

cat "$DIR/bench.pcap" "$DIR/prefix.pcap" >/dev/null # page cache: time the analysis, not the disk
full=$(measure bfdcap-full build/bfdcap --json "$DIR/bench.pcap")
pre=$(measure bfdcap-prefix build/bfdcap --json "$DIR/prefix.pcap")
RUNS=1
pipe=$(measure pipeline-prefix env PYTHONPATH=tests/capture /usr/bin/python3 tests/capture/bench/pipeline.py "$DIR/prefix.pcap")
echo "$full" | awk -v n="$N" '{printf "bfdcap, full file:   %s s wall, %s s CPU, %d MB RSS: %.2f M packets/s (wall), %.2f M packets/s per CPU-second\n", $2, $3, $4/1024, n/$2/1e6, n/$3/1e6}'
echo "$pre" | awk -v n="$P" '{printf "bfdcap, prefix:      %s s wall, %s s CPU, %d MB RSS: %.2f M packets/s (wall)\n", $2, $3, $4/1024, n/$2/1e6}'
echo "$pipe" | awk -v n="$P" '{printf "tshark+Python, prefix: %s s wall, %s s CPU, %d MB RSS: %.3f M packets/s (wall)\n", $2, $3, $4/1024, n/$2/1e6}'
echo "$pre $pipe" | awk '{printf "ratio on the prefix: %.0fx (wall), %.0fx (CPU)\n", $6/$2, $7/$3}'
