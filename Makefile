# xdp-bfd: the one entry point.
#   make            build everything into $(O): xdp-bfd, bfdcap, the BPF objects
#   make deps       install the Debian packages (packaging/deps.txt), idempotent
#   make demo       the main job: both devices under load, measured from the wire
#   make test       every test (unit, BPF_PROG_TEST_RUN, fuzz smoke, lab)
#   make bench      benchmarks whose figures go in the README
#   make bench-sweep  the detection sweep at 1,024 / 8,192 / 65,536 sessions, before and after
#   make bench-floor  the reply path's floor: xdp_swap plus one primitive at a time
#   make asan       C unit tests under ASan+UBSan
#   make deb        the Debian package (debhelper, lintian-checked) into $(O)/deb
# Quiet unless V=1.

O ?= build
CC ?= gcc
CLANG ?= clang
BPFTOOL ?= bpftool
PY := /usr/bin/python3
PYTEST := /usr/bin/python3 -m pytest

ifeq ($(V),1)
Q :=
msg := @true
else
Q := @
msg := @printf '  %-7s %s\n'
endif

# The version comes from debian/changelog, the package's one record of it.
XDP_BFD_VERSION ?= $(shell dpkg-parsechangelog -l debian/changelog -S Version 2>/dev/null || echo unknown)
CFLAGS_COMMON := -std=gnu11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE
ENGINE_CFLAGS := $(CFLAGS_COMMON) -Ibpf -Iengine -I$(O) -DXDP_BFD_VERSION='"$(XDP_BFD_VERSION)"' \
	$(EXTRA_CFLAGS)
BPF_CFLAGS := -target bpf -O2 -g -mcpu=v3 -Wall -Werror -Wshadow -Wimplicit-fallthrough -I$(O) -Ibpf

ENGINE_SRCS := $(filter-out engine/main.c,$(wildcard engine/*.c))
ENGINE_OBJS := $(patsubst engine/%.c,$(O)/engine/%.o,$(ENGINE_SRCS))
CAPTURE_SRCS := $(filter-out capture/main.c,$(wildcard capture/*.c))
CAPTURE_OBJS := $(patsubst capture/%.c,$(O)/capture/%.o,$(CAPTURE_SRCS))
BPF_OBJS := $(O)/xdp_bfd.bpf.o $(O)/xdp_pass.bpf.o $(O)/xdp_swap.bpf.o $(O)/xdp_bfdpeer.bpf.o
# bfdpeer (peer/) shares the engine's codec, state machine, session table and log.
PEER_OBJS := $(patsubst peer/%.c,$(O)/peer/%.o,$(wildcard peer/*.c))
PEER_ENGINE_OBJS := $(addprefix $(O)/engine/,codec.o fsm.o session.o timeq.o log.o writer.o)
UNIT_TESTS := $(patsubst tests/unit/%.c,$(O)/tests/%,$(wildcard tests/unit/test_*.c))

.SECONDARY:
.PHONY: all deb deps demo test test-unit test-prog test-prog-soak test-lab test-capture test-nic test-topo test-topo-classes test-fuzz bench \
	bench-sweep bench-floor asan clean format \
	lint lint-c lint-py
all: $(BPF_OBJS) $(O)/xdp-bfd $(O)/bfdpeer $(O)/bfdcap $(O)/prog_test $(UNIT_TESTS)

deps:
	$(Q)sh packaging/deps.sh

$(O)/vmlinux.h:
	$(Q)mkdir -p $(O)
	$(msg) BTF $@
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

$(O)/%.bpf.o: bpf/%.bpf.c bpf/bfd_shared.h $(wildcard bpf/kern/*.h) $(O)/vmlinux.h
	$(msg) BPF $@
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(O)/%.skel.h: $(O)/%.bpf.o
	$(msg) SKEL $@
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst .bpf.o,,$(notdir $<)) > $@.tmp && mv $@.tmp $@

$(O)/engine/%.o: engine/%.c $(wildcard engine/*.h) bpf/bfd_shared.h $(O)/xdp_bfd.skel.h
	$(Q)mkdir -p $(dir $@)
	$(msg) CC $@
	$(Q)$(CC) $(ENGINE_CFLAGS) -c $< -o $@

$(O)/xdp-bfd: $(O)/engine/main.o $(ENGINE_OBJS)
	$(msg) LD $@
	$(Q)$(CC) $(ENGINE_CFLAGS) -o $@ $^ -lbpf -lelf -lz -lcap -lsystemd $(LDFLAGS)

$(O)/peer/%.o: peer/%.c $(wildcard peer/*.h) $(wildcard engine/*.h) bpf/bfd_shared.h \
		$(O)/xdp_bfdpeer.skel.h
	$(Q)mkdir -p $(dir $@)
	$(msg) CC $@
	$(Q)$(CC) $(ENGINE_CFLAGS) -Ipeer -c $< -o $@

$(O)/bfdpeer: $(PEER_OBJS) $(PEER_ENGINE_OBJS)
	$(msg) LD $@
	$(Q)$(CC) $(ENGINE_CFLAGS) -o $@ $^ -lbpf -lelf -lz -ljansson $(LDFLAGS)

$(O)/capture/%.o: capture/%.c $(wildcard capture/*.h) bpf/bfd_shared.h
	$(Q)mkdir -p $(dir $@)
	$(msg) CC $@
	$(Q)$(CC) $(CFLAGS_COMMON) -Ibpf -Icapture $(EXTRA_CFLAGS) -c $< -o $@

$(O)/bfdcap: $(O)/capture/main.o $(CAPTURE_OBJS)
	$(msg) LD $@
	$(Q)$(CC) $(CFLAGS_COMMON) $(EXTRA_CFLAGS) -o $@ $^ -lpcap -ljansson -lz -lm

# C unit tests: each tests/unit/test_X.c links against the engine's objects (not main.o).
$(O)/tests/%: tests/unit/%.c tests/unit/check.h $(ENGINE_OBJS)
	$(Q)mkdir -p $(dir $@)
	$(msg) CC $@
	$(Q)$(CC) $(ENGINE_CFLAGS) -Itests/unit -o $@ $< $(ENGINE_OBJS) -lbpf -lelf -lz -lcap -lsystemd $(LDFLAGS)

# XDP program under BPF_PROG_TEST_RUN.
$(O)/prog_test: tests/prog/prog_test.c tests/prog/fixtures.h tests/unit/check.h $(O)/xdp_swap.skel.h $(ENGINE_OBJS)
	$(msg) CC $@
	$(Q)$(CC) $(ENGINE_CFLAGS) -Itests/prog -Itests/unit -o $@ $< $(ENGINE_OBJS) -lbpf -lelf -lz -lcap -lsystemd -lm $(LDFLAGS)

test: deps all
	$(Q)$(MAKE) --no-print-directory lint test-unit asan test-prog test-fuzz test-capture test-nic test-topo test-lab

test-unit: $(UNIT_TESTS)
	$(Q)set -e; for t in $(UNIT_TESTS); do echo "== $$t"; $$t; done

# The engine's inputs under libFuzzer with ASan and UBSan: a short run on the committed corpus
# (tests/fuzz/make_engine_corpus.py); FUZZ_SECONDS=600 for a longer one.
FUZZ_SECONDS ?= 20
FUZZ_ENGINE_SRCS := engine/bfddp.c engine/codec.c engine/fsm.c engine/log.c engine/session.c engine/timeq.c \
	engine/writer.c
$(O)/fuzz/fuzz_engine: tests/fuzz/fuzz_engine.c $(FUZZ_ENGINE_SRCS) $(wildcard engine/*.h) bpf/bfd_shared.h
	$(Q)mkdir -p $(dir $@)
	$(msg) FUZZ $@
	$(Q)$(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		-D_GNU_SOURCE -Ibpf -Iengine -I$(O) -o $@ tests/fuzz/fuzz_engine.c $(FUZZ_ENGINE_SRCS) -lbpf

test-fuzz: $(O)/fuzz/fuzz_engine
	$(Q)rm -rf $(O)/fuzz/engine-new && mkdir -p $(O)/fuzz/engine-new
	$(Q)if $(O)/fuzz/fuzz_engine -max_total_time=$(FUZZ_SECONDS) -artifact_prefix=$(O)/fuzz/ \
		$(O)/fuzz/engine-new tests/fuzz/corpus/engine > $(O)/fuzz/engine.log 2>&1; then \
		grep -E '^Done' $(O)/fuzz/engine.log; \
	else tail -40 $(O)/fuzz/engine.log; echo "fuzz_engine failed: see $(O)/fuzz/"; exit 1; fi

test-prog: $(O)/prog_test
	$(Q)$(O)/prog_test

# C14b's 10-minute soak of the sweep (500 sessions, simulated clock; make test runs its first
# minute): about 15 s.
test-prog-soak: $(O)/prog_test
	$(Q)$(O)/prog_test --sweep-scale

test-capture: $(O)/bfdcap
	$(Q)$(PYTEST) -q tests/capture

test-lab: all
	$(Q)$(PYTEST) -q tests/lab

# NIC tuning and hardware-stamped capture: parsers on recorded igb/I210 outputs, and the real
# tools on veth and loopback in namespaces of their own (no lab run, no lock).
test-nic: $(O)/xdp-bfd
	$(Q)$(PYTEST) -q tests/nic

# Topology descriptions: topo check's conflicts, the bare-metal renderer pinned by golden files
# and checked by ansible's own tools, and its playbooks run against namespace hosts
# (docs/baremetal.md).
test-topo: all
	$(Q)$(PYTEST) -q tests/topo

# The every-class rehearsal (about 5 min), outside make test's budget.
test-topo-classes: all
	$(Q)XDP_BFD_REHEARSAL_CLASSES=1 $(PYTEST) -q tests/topo/test_rehearsal.py -k every_session_class

demo: deps all
	$(Q)$(PY) -m lab demo $(DEMO_ARGS)

# The sweep as it was before its timing wheel (commit SWEEP_BASE, a linear bpf_loop over every
# slot), its slot cap raised to 65,536 so it runs at the sizes measured: prog_test --bench-sweep
# loads it beside the current one. Needs the git history (a bench, not a build step).
SWEEP_BASE ?= 2434297
$(O)/bench/xdp_bfd_base.bpf.o: $(O)/vmlinux.h
	$(Q)rm -rf $(O)/bench/base && mkdir -p $(O)/bench/base
	$(msg) BPF "$@ (the sweep of $(SWEEP_BASE))"
	$(Q)git archive $(SWEEP_BASE) bpf | tar -x -C $(O)/bench/base
	$(Q)sed -i 's/^#define BFD_MAX_SESSIONS_LIMIT.*/#define BFD_MAX_SESSIONS_LIMIT 65536/' \
		$(O)/bench/base/bpf/bfd_shared.h
	$(Q)$(CLANG) $(BPF_CFLAGS) -I$(O)/bench/base/bpf -c $(O)/bench/base/bpf/xdp_bfd.bpf.c -o $@

bench-sweep: all $(O)/bench/xdp_bfd_base.bpf.o
	$(Q)$(O)/prog_test --bench-sweep $(O)/bench/xdp_bfd_base.bpf.o

bench: all $(O)/bench/xdp_bfd_base.bpf.o
	$(Q)$(O)/prog_test --bench
	$(Q)$(O)/prog_test --bench-sweep $(O)/bench/xdp_bfd_base.bpf.o
	$(Q)PYTHONPATH=.:tests/lab $(PY) tests/bench/engine_cpu.py --seconds 60

# The reply path's floor (docs/engine.md "The reply path's cost"): xdp_swap plus one primitive
# at a time, timed like prog_test --bench. Not part of the product.
$(O)/bench/xdp_floor.bpf.o: tests/bench/floor/xdp_floor.bpf.c bpf/kern/swap.h $(O)/vmlinux.h
	$(Q)mkdir -p $(dir $@)
	$(msg) BPF $@
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(O)/bench/xdp_floor: tests/bench/floor/xdp_floor.c
	$(Q)mkdir -p $(dir $@)
	$(msg) CC $@
	$(Q)$(CC) -O2 -Wall -o $@ $< -lbpf $(LDFLAGS)

bench-floor: $(O)/bench/xdp_floor.bpf.o $(O)/bench/xdp_floor
	$(Q)$(O)/bench/xdp_floor $(O)/bench/xdp_floor.bpf.o

asan:
	$(Q)$(MAKE) --no-print-directory O=$(O)/asan EXTRA_CFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer" test-unit

# DEB_VERSION=X builds the same tree as version X (a newer build to upgrade to).
deb:
	$(Q)sh packaging/build-deb.sh $(abspath $(O))/deb $(DEB_VERSION)

clean:
	$(Q)rm -rf $(O)

# C sources under .clang-format (100 columns); tests/prog/fixtures.h is generated, so left out.
C_SOURCES := $(filter-out tests/prog/fixtures.h,$(wildcard engine/*.[ch] peer/*.[ch] capture/*.[ch] bpf/*.[ch] \
	bpf/kern/*.h tests/unit/*.[ch] tests/prog/*.[ch] tests/fuzz/*.c tests/capture/bench/*.c))

format:
	$(Q)clang-format -i $(C_SOURCES)

lint: lint-c lint-py

lint-c:
	$(msg) LINT "clang-format: $(words $(C_SOURCES)) C files"
	$(Q)clang-format --dry-run -Werror $(C_SOURCES)

# Python under flake8 (its defaults, lines of up to 100 columns like the C; setup.cfg [flake8]).
lint-py:
	$(msg) LINT "flake8: lab/ tests/"
	$(Q)$(PY) -m flake8 lab tests
