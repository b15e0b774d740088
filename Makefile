# SPDX-License-Identifier: MIT
# uskb — plain Makefile. Variables: PREFIX, DESTDIR, CC, SANITIZE (e.g.
# address,undefined or thread), V=1 for full command lines.

VERSION     := 0.1.0
SOVERSION   := 0
PREFIX      ?= /usr/local
LIBDIR      ?= $(PREFIX)/lib
INCLUDEDIR  ?= $(PREFIX)/include
MANDIR      ?= $(PREFIX)/share/man
CC          ?= cc

comma := ,
ifneq ($(BUILD_VARIANT),)
BUILD       := build/$(BUILD_VARIANT)
else ifneq ($(SANITIZE),)
BUILD       := build/san-$(subst $(comma),-,$(SANITIZE))
else
BUILD       := build
endif
ifneq ($(SANITIZE),)
SANFLAGS    := -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
endif

OPT         ?= -O2
CFLAGS      ?= $(OPT) -g
WARN        := -Wall -Wextra -Wshadow -Wno-missing-field-initializers
# no path of the build tree in what is built (debug info, __FILE__): an installed file names none
PREFIX_MAP  := -ffile-prefix-map=$(CURDIR)=.
BASEFLAGS   := -std=gnu11 -Iinclude $(WARN) $(SANFLAGS) $(PREFIX_MAP)
LIBFLAGS    = $(BASEFLAGS) -Isrc -fPIC -fvisibility=hidden
LDLIBS      := -lpthread

# the xdp: device needs libxdp and libbpf (libxdp-dev, libbpf-dev); without them it says so
HAVE_XDP    ?= $(shell pkg-config --exists libxdp libbpf 2>/dev/null && echo 1)
ifeq ($(HAVE_XDP),1)
XDP_CFLAGS  := -DUSKB_HAVE_XDP $(shell pkg-config --cflags libxdp libbpf)
XDP_LIBS    := $(shell pkg-config --libs libxdp libbpf)
else
$(info uskb: building everything but the xdp: and xdp-live: devices (no libxdp-dev/libbpf-dev, or HAVE_XDP=0))
endif
# the socket devices' uring mode needs liburing (liburing-dev); without it that mode says so
HAVE_URING  ?= $(shell pkg-config --exists liburing 2>/dev/null && echo 1)
ifeq ($(HAVE_URING),1)
URING_CFLAGS := -DUSKB_HAVE_URING $(shell pkg-config --cflags liburing)
URING_LIBS  := $(shell pkg-config --libs liburing)
else
$(info uskb: the socket devices without their uring mode (no liburing-dev, or HAVE_URING=0))
endif
# what libuskb-netdev links besides libuskb
NETDEV_LIBS := $(XDP_LIBS) $(URING_LIBS)

ifneq ($(V),1)
Q := @
quiet = @printf '  %-7s %s\n' $(1) $(2);
else
Q :=
quiet =
endif

# The layers, bottom up: a file may call into its own layer and the ones
# before it, never after (scripts/check-layers, docs/architecture.md).
LAYERS      := lib mem skb ubuf nl dev pktgen vhost tools

# four libraries: the buffers (libuskb), the devices (libuskb-netdev, the
# only one that needs libxdp), pktgen (libuskb-pktgen) and the vhost-user
# backend (libuskb-vhost)
CORE_SRCS   := $(wildcard src/lib/*.c src/mem/*.c src/skb/*.c src/ubuf/*.c src/nl/*.c)
NETDEV_SRCS := $(wildcard src/dev/*.c)
PKTGEN_SRCS := $(wildcard src/pktgen/*.c)
VHOST_SRCS  := $(wildcard src/vhost/*.c)
LIB_SRCS    := $(CORE_SRCS) $(NETDEV_SRCS) $(PKTGEN_SRCS) $(VHOST_SRCS)
objs         = $(patsubst src/%.c,$(BUILD)/obj/%.o,$(1))
CORE_OBJS   := $(call objs,$(CORE_SRCS))
NETDEV_OBJS := $(call objs,$(NETDEV_SRCS))
PKTGEN_OBJS := $(call objs,$(PKTGEN_SRCS))
VHOST_OBJS  := $(call objs,$(VHOST_SRCS))
# xdp-live: uskb-pktgen's live program is BPF (clang -target bpf), loaded with libbpf;
# without clang or libbpf the device refuses to run and says why
# (libbpf 1.0 and later: bpf_test_run_opts.batch_size, bpf_ktime_get_tai_ns)
HAVE_LIVE   ?= $(if $(and $(filter 1,$(HAVE_XDP)),$(shell command -v clang),$(shell pkg-config --atleast-version=1.0 libbpf && echo 1)),1)
ifeq ($(HAVE_LIVE),1)
LIVE_CFLAGS := -DUSKB_HAVE_XDP_LIVE $(shell pkg-config --cflags libbpf)
PKTGEN_LIBS := $(shell pkg-config --libs libbpf)
PKTGEN_OBJS += $(BUILD)/obj/pktgen/live_obj.o
else
$(info uskb: uskb-pktgen without its xdp-live: program (no clang, libbpf-dev 1.0+, or HAVE_LIVE=0))
endif
LIB_OBJS    := $(CORE_OBJS) $(NETDEV_OBJS) $(PKTGEN_OBJS) $(VHOST_OBJS)
HEADERS     := $(wildcard include/uskb/*.h)
PRIV_HEADERS := $(wildcard src/*/*.h)
STATIC      := $(BUILD)/libuskb.a
NETDEV_A    := $(BUILD)/libuskb-netdev.a
PKTGEN_A    := $(BUILD)/libuskb-pktgen.a
VHOST_A     := $(BUILD)/libuskb-vhost.a
SHARED      := $(BUILD)/libuskb.so.$(VERSION)
NETDEV_SO   := $(BUILD)/libuskb-netdev.so.$(VERSION)
PKTGEN_SO   := $(BUILD)/libuskb-pktgen.so.$(VERSION)
VHOST_SO    := $(BUILD)/libuskb-vhost.so.$(VERSION)
PCS         := $(BUILD)/uskb.pc $(BUILD)/uskb-netdev.pc $(BUILD)/uskb-pktgen.pc $(BUILD)/uskb-vhost.pc
# what a program using devices or pktgen links, in link order
ALL_A       := $(VHOST_A) $(PKTGEN_A) $(NETDEV_A) $(STATIC)
ALL_LDLIBS  := $(NETDEV_LIBS) $(LDLIBS)
TEST_SRCS   := $(wildcard test/*.c)
TEST_LIBSRC := test/model_ops.c
TEST_BINS   := $(patsubst test/%.c,$(BUILD)/test/%,$(filter-out $(TEST_LIBSRC),$(TEST_SRCS)))
EX_BINS     := $(patsubst examples/%.c,$(BUILD)/examples/%,$(wildcard examples/*.c))
# uskb-dp parses its netlink with libmnl (libmnl-dev); without it, it is not built
MNL_LIBS    := $(shell pkg-config --libs libmnl 2>/dev/null)
PKTGEN_TOOL_OBJS := $(patsubst tools/%.c,$(BUILD)/obj/tools/%.o,$(wildcard tools/pktgen/*.c))
DP_TOOL_OBJS := $(patsubst tools/%.c,$(BUILD)/obj/tools/%.o,$(wildcard tools/dp/*.c))
VHOST_TOOL_OBJS := $(patsubst tools/%.c,$(BUILD)/obj/tools/%.o,$(wildcard tools/vhost/*.c))
TOOL_BINS   := $(BUILD)/tools/uskb-pktgen $(BUILD)/tools/uskb-vhost $(if $(MNL_LIBS),$(BUILD)/tools/uskb-dp)
TOOL_OBJS   := $(PKTGEN_TOOL_OBJS) $(VHOST_TOOL_OBJS) $(if $(MNL_LIBS),$(DP_TOOL_OBJS))
TEST_SCRIPTS := $(patsubst test/%.sh,$(BUILD)/test/%,$(wildcard test/*.sh))
# sourced by the shell tests, not run (not executable)
TEST_HELPERS := $(patsubst test/%,$(BUILD)/test/%,$(wildcard test/*.bash))
# programs the tests run (test/run runs only the directory's top level)
TEST_HELPERS += $(patsubst test/helpers/%.c,$(BUILD)/test/helpers/%,$(wildcard test/helpers/*.c))
# BPF programs for the tests' sinks (clang -target bpf); without clang the tests that need them skip
BPF_OBJS    := $(if $(shell command -v clang),$(patsubst bpf/%.c,$(BUILD)/bpf/%.o,$(wildcard bpf/*.c)))
MULTIARCH   := $(shell gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
BINDIR      ?= $(PREFIX)/bin
DATADIR     ?= $(PREFIX)/share

.PHONY: FORCE all lib tests tools examples demo deps test check check-layers fuzz fuzz-run bench install uninstall clean format

all: lib tools examples

lib: $(STATIC) $(NETDEV_A) $(PKTGEN_A) $(VHOST_A) $(SHARED) $(NETDEV_SO) $(PKTGEN_SO) $(VHOST_SO) $(PCS)

$(BUILD)/obj/%.o: src/%.c $(HEADERS) $(PRIV_HEADERS)
	@mkdir -p $(@D)
	$(call quiet,CC,$<)
	$(Q)$(CC) $(LIBFLAGS) $(CFLAGS) -c $< -o $@

$(BUILD)/obj/dev/xdp.o $(BUILD)/obj/dev/xdplive.o: LIBFLAGS += $(XDP_CFLAGS)
$(BUILD)/obj/pktgen/live.o: LIBFLAGS += $(LIVE_CFLAGS)
$(BUILD)/obj/pktgen/live.o $(BUILD)/obj/pktgen/flow.o: bpf/pktgen_live.h
# the live program's ELF image, linked in (.incbin)
$(BUILD)/obj/pktgen/live_obj.o: src/pktgen/live_obj.S $(BUILD)/bpf/pktgen_live.o
	@mkdir -p $(@D)
	$(call quiet,AS,$<)
	$(Q)$(CC) -c -DUSKB_LIVE_OBJ='"$(BUILD)/bpf/pktgen_live.o"' $< -o $@
# the uring send (sock_uring.c) and the uring receive (sock_rx.c)
$(BUILD)/obj/dev/sock_uring.o $(BUILD)/obj/dev/sock_rx.o: LIBFLAGS += $(URING_CFLAGS)

$(BUILD)/%.a:
	$(call quiet,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(STATIC): $(CORE_OBJS)
$(NETDEV_A): $(NETDEV_OBJS)
$(PKTGEN_A): $(PKTGEN_OBJS)
$(VHOST_A): $(VHOST_OBJS)

# lib NAME, objects, map, libraries below it
define shared_lib
	$(call quiet,LD,$@)
	$(Q)$(CC) -shared -Wl,-soname,$(1).so.$(SOVERSION) -Wl,--version-script=$(3) \
		$(SANFLAGS) $(CFLAGS) -o $@ $(2) -L$(BUILD) $(4)
	$(Q)ln -sf $(1).so.$(VERSION) $(BUILD)/$(1).so.$(SOVERSION)
	$(Q)ln -sf $(1).so.$(VERSION) $(BUILD)/$(1).so
endef

$(SHARED): $(CORE_OBJS) src/libuskb.map
	$(call shared_lib,libuskb,$(CORE_OBJS),src/libuskb.map,$(LDLIBS))

$(NETDEV_SO): $(NETDEV_OBJS) src/dev/libuskb-netdev.map $(SHARED)
	$(call shared_lib,libuskb-netdev,$(NETDEV_OBJS),src/dev/libuskb-netdev.map,-luskb $(NETDEV_LIBS) $(LDLIBS))

$(PKTGEN_SO): $(PKTGEN_OBJS) src/pktgen/libuskb-pktgen.map $(NETDEV_SO)
	$(call shared_lib,libuskb-pktgen,$(PKTGEN_OBJS),src/pktgen/libuskb-pktgen.map,-luskb-netdev -luskb $(PKTGEN_LIBS) $(LDLIBS))

$(VHOST_SO): $(VHOST_OBJS) src/vhost/libuskb-vhost.map $(NETDEV_SO)
	$(call shared_lib,libuskb-vhost,$(VHOST_OBJS),src/vhost/libuskb-vhost.map,-luskb-netdev -luskb $(LDLIBS))

# the .pc files follow PREFIX and friends: a build for /usr/local and an
# install for /usr must not share them
# a LIBDIR the dynamic linker does not search (PREFIX=/opt/uskb, $HOME/.local): programs
# linked through pkg-config carry it as their RUNPATH, and find the libraries at run time
PC_RPATH    := $(if $(filter $(LIBDIR),/lib /usr/lib /usr/local/lib /lib/$(MULTIARCH) \
		/usr/lib/$(MULTIARCH) /usr/local/lib/$(MULTIARCH)),,-Wl,-rpath,$${libdir} )
PC_VARS     := $(PREFIX)|$(LIBDIR)|$(INCLUDEDIR)|$(VERSION)|$(LDLIBS)|$(NETDEV_LIBS)|$(PKTGEN_LIBS)|$(PC_RPATH)
$(BUILD)/pc-vars: FORCE
	@mkdir -p $(@D)
	@echo '$(PC_VARS)' | cmp -s - $@ || echo '$(PC_VARS)' > $@

$(BUILD)/%.pc: %.pc.in $(BUILD)/pc-vars Makefile
	@mkdir -p $(@D)
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
		-e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@VERSION@|$(VERSION)|g' \
		-e 's|@LIBS_PRIVATE@|$(LDLIBS)|g' -e 's|@NETDEV_LIBS@|$(NETDEV_LIBS)|g' \
		-e 's|@PKTGEN_LIBS@|$(PKTGEN_LIBS)|g' -e 's|@RPATH@|$(PC_RPATH)|g' $< > $@

# no call from a lower layer into a higher one; every global prefixed; the .so files export their maps
check-layers: lib $(TOOL_OBJS)
	@scripts/check-layers $(BUILD)/obj $(LAYERS)
	@scripts/check-symbols $(BUILD)

# ---- examples, tests ----

examples: $(EX_BINS)

$(BUILD)/examples/%: examples/%.c $(STATIC)
	@mkdir -p $(@D)
	$(call quiet,CC,$<)
	$(Q)$(CC) $(BASEFLAGS) $(CFLAGS) $< -o $@ $(STATIC) $(LDLIBS)

tools: $(TOOL_BINS)

# the version, and where --veth finds netns-veth.sh once installed: DATADIR/uskb relative to
# BINDIR, so that the tool looks beside itself (a build-tree tool finds the sources' by its place)
TOOL_FLAGS  = -DUSKB_VERSION_STRING=\"$(VERSION)\" \
	-DUSKB_DATA_FROM_BIN=\"$(shell realpath -m --relative-to=$(BINDIR) $(DATADIR)/uskb)\"

$(BUILD)/obj/tools/%.o: tools/%.c $(HEADERS) $(wildcard tools/*/*.h) src/lib/compiler.h src/lib/unixpath.h Makefile
	@mkdir -p $(@D)
	$(call quiet,CC,$<)
	$(Q)$(CC) $(BASEFLAGS) -Isrc $(TOOL_FLAGS) $(CFLAGS) -c $< -o $@

$(BUILD)/tools/uskb-pktgen: $(PKTGEN_TOOL_OBJS) $(ALL_A)
	@mkdir -p $(@D)
	$(call quiet,LD,$@)
	$(Q)$(CC) $(BASEFLAGS) $(CFLAGS) $(PKTGEN_TOOL_OBJS) -o $@ $(ALL_A) $(ALL_LDLIBS)

$(BUILD)/tools/uskb-vhost: $(VHOST_TOOL_OBJS) $(ALL_A)
	@mkdir -p $(@D)
	$(call quiet,LD,$@)
	$(Q)$(CC) $(BASEFLAGS) $(CFLAGS) $(VHOST_TOOL_OBJS) -o $@ $(ALL_A) $(ALL_LDLIBS)

$(BUILD)/tools/uskb-dp: $(DP_TOOL_OBJS) $(ALL_A)
	@mkdir -p $(@D)
	$(call quiet,LD,$@)
	$(Q)$(CC) $(BASEFLAGS) $(CFLAGS) $(DP_TOOL_OBJS) -o $@ $(ALL_A) $(ALL_LDLIBS) $(MNL_LIBS) -lm

tests: $(TEST_BINS) $(TEST_SCRIPTS) $(TEST_HELPERS) $(TOOL_BINS) $(EX_BINS) $(BPF_OBJS)

# -g: libbpf reads the maps of pktgen_live.c from the BTF it gives
$(BUILD)/bpf/%.o: bpf/%.c $(wildcard bpf/*.h) Makefile
	@mkdir -p $(@D)
	$(call quiet,BPF,$<)
	$(Q)clang -O2 -g -Wall -target bpf $(PREFIX_MAP) -I/usr/include/$(MULTIARCH) -c $< -o $@

# shell tests run from the build directory like the C ones
$(BUILD)/test/%: test/%.sh
	@mkdir -p $(@D)
	$(Q)install -m 755 $< $@

$(BUILD)/test/%.bash: test/%.bash
	@mkdir -p $(@D)
	$(Q)install -m 644 $< $@

$(BUILD)/test/helpers/%: test/helpers/%.c
	@mkdir -p $(@D)
	$(call quiet,CC,$<)
	$(Q)$(CC) $(BASEFLAGS) $(CFLAGS) $< -o $@

# test/netlink and test/ovs read what they build with libmnl's parser (libmnl-dev); without it, they skip
# (TEST_CPPFLAGS, not CFLAGS: a CFLAGS given on make's command line, as .ci/run's clang
# build does, would override these)
$(BUILD)/test/netlink $(BUILD)/test/ovs $(BUILD)/test/dp-handler: TEST_CPPFLAGS += $(if $(MNL_LIBS),-DUSKB_HAVE_MNL)
$(BUILD)/test/netlink $(BUILD)/test/ovs $(BUILD)/test/dp-handler: ALL_LDLIBS += $(MNL_LIBS)
# test/pktgen-engine also checks the engine's batch clock from the inside (src/pktgen/pg.h)
$(BUILD)/test/pktgen-engine: TEST_CPPFLAGS += -Isrc
$(BUILD)/test/pktgen-engine: src/pktgen/pg.h

$(BUILD)/test/%: test/%.c test/t.h test/model.h $(TEST_LIBSRC) $(ALL_A)
	@mkdir -p $(@D)
	$(call quiet,CC,$<)
	$(Q)$(CC) $(BASEFLAGS) $(TEST_CPPFLAGS) $(CFLAGS) $< $(TEST_LIBSRC) -o $@ $(ALL_A) $(ALL_LDLIBS)

# Build dependencies (Debian): installed when missing, as root or via sudo.
deps:
	@scripts/deps.sh || echo "warning: could not install all dependencies; some tests may skip" >&2

# the pktgen default run on the null device, then a small pcap shown by tshark
demo: deps
	@$(MAKE) --no-print-directory tools examples
	$(BUILD)/tools/uskb-pktgen -i null
	@echo
	$(BUILD)/tools/uskb-pktgen -i pcap:$(BUILD)/demo.pcap -n 5 -q -k --frags 1 -s 100 \
		"src_min 198.18.0.1" "src_max 198.18.0.1" --json
	@if command -v tshark >/dev/null; then tshark -r $(BUILD)/demo.pcap 2>/dev/null; \
	else echo "(tshark not installed: open $(BUILD)/demo.pcap in Wireshark)"; fi

test check: deps
	@$(MAKE) --no-print-directory tests
	@USKB_SANITIZE=$(SANITIZE) test/run $(BUILD)/test

# ---- fuzzing (clang + libFuzzer) ----

FUZZ_CC     ?= clang
FUZZ_FLAGS  := -std=gnu11 -Iinclude -Isrc -g -O1 -fsanitize=fuzzer,address,undefined
FUZZ_TIME   ?= 60

fuzz: build/fuzz/fuzz_skb build/fuzz/fuzz_pktgen $(if $(MNL_LIBS),build/fuzz/fuzz_dp)

build/fuzz/fuzz_skb: fuzz/fuzz_skb.c $(TEST_LIBSRC) test/model.h $(CORE_SRCS) $(HEADERS)
	@mkdir -p $(@D)
	$(call quiet,CC,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_FLAGS) fuzz/fuzz_skb.c $(TEST_LIBSRC) $(CORE_SRCS) -o $@ -lpthread

build/fuzz/fuzz_pktgen: fuzz/fuzz_pktgen.c $(LIB_SRCS) $(HEADERS) src/pktgen/pg.h
	@mkdir -p $(@D)
	$(call quiet,CC,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_FLAGS) fuzz/fuzz_pktgen.c $(LIB_SRCS) -o $@ -lpthread

# uskb-dp's parsers: frames into keys, netlink messages from handlers (libmnl)
build/fuzz/fuzz_dp: fuzz/fuzz_dp.c tools/dp/msg.c tools/dp/dp.h $(CORE_SRCS) $(HEADERS)
	@mkdir -p $(@D)
	$(call quiet,CC,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_FLAGS) -DUSKB_VERSION_STRING=\"fuzz\" fuzz/fuzz_dp.c tools/dp/msg.c \
		$(CORE_SRCS) -o $@ -lpthread $(MNL_LIBS)

# FUZZ_TIME seconds in all: half on the skb operations, a quarter each on the
# pktgen parser and uskb-dp's parsers
fuzz-run: fuzz
	@mkdir -p build/fuzz/corpus build/fuzz/corpus-pktgen build/fuzz/corpus-dp
	build/fuzz/fuzz_skb -max_total_time=$$(( $(FUZZ_TIME) / 2 )) -print_final_stats=1 \
		build/fuzz/corpus fuzz/corpus
	build/fuzz/fuzz_pktgen -max_total_time=$$(( $(FUZZ_TIME) / 4 )) -print_final_stats=1 \
		-max_len=2048 build/fuzz/corpus-pktgen fuzz/corpus-pktgen
	$(if $(MNL_LIBS),build/fuzz/fuzz_dp -max_total_time=$$(( $(FUZZ_TIME) / 4 )) -print_final_stats=1 \
		-max_len=4096 build/fuzz/corpus-dp fuzz/corpus-dp)

# ---- benchmarks ----

# `make bench` builds every benchmark program; the scripts in bench/ run them
# (bench/run, bench/pktgen, bench/net, bench/compare, bench/icount; USKB_BENCH_SMOKE=1 for
# a short run that only proves they work). The DPDK peer builds when
# libdpdk-dev is installed (scripts/deps.sh --bench).
HAVE_DPDK   ?= $(shell pkg-config --exists libdpdk 2>/dev/null && echo 1)
# (and the loops bench/icount counts instructions in, built again for its own variant)
BENCH_CORE  := $(patsubst %,$(BUILD)/bench/bench_%,core cache zc) $(BUILD)/bench/icount
BENCH_BINS  := $(BENCH_CORE) $(BUILD)/bench/bench_pktgen
ifeq ($(HAVE_URING),1)
BENCH_BINS  += $(BUILD)/bench/bench_sock
endif
ifeq ($(HAVE_DPDK),1)
BENCH_BINS  += $(BUILD)/bench/bench_dpdk $(BUILD)/bench/icount_dpdk
endif
ifeq ($(HAVE_LIVE),1)
BENCH_BINS  += $(BUILD)/bench/bench_live
endif
BENCH_DEPS  := bench/bench.h bench/spsc.h $(HEADERS)

bench: $(BENCH_BINS)

# the buffer benchmarks use libuskb alone
$(BENCH_CORE): $(BUILD)/bench/%: bench/%.c $(BENCH_DEPS) $(STATIC)
	@mkdir -p $(@D)
	$(call quiet,CC,$@)
	$(Q)$(CC) $(BASEFLAGS) $(CFLAGS) $< -o $@ $(STATIC) $(LDLIBS)

$(BUILD)/bench/bench_pktgen: bench/bench_pktgen.c $(BENCH_DEPS) $(ALL_A)
	@mkdir -p $(@D)
	$(call quiet,CC,$@)
	$(Q)$(CC) $(BASEFLAGS) $(CFLAGS) $< -o $@ $(ALL_A) $(ALL_LDLIBS)

# the bare socket loops need liburing too
$(BUILD)/bench/bench_sock: bench/bench_sock.c $(BENCH_DEPS) $(ALL_A)
	@mkdir -p $(@D)
	$(call quiet,CC,$@)
	$(Q)$(CC) $(BASEFLAGS) $(URING_CFLAGS) $(CFLAGS) $< -o $@ $(ALL_A) $(ALL_LDLIBS)

# the live program's fields, timed by the kernel (libbpf; the program from build/bpf/)
$(BUILD)/bench/bench_live: bench/bench_live.c $(BENCH_DEPS) bpf/pktgen_live.h $(BUILD)/bpf/pktgen_live.o
	@mkdir -p $(@D)
	$(call quiet,CC,$@)
	$(Q)$(CC) $(BASEFLAGS) $(LIVE_CFLAGS) $(CFLAGS) $< -o $@ $(PKTGEN_LIBS)

# DPDK's headers are not clean under our warnings; its own flags, and -Wall;
# libuskb linked in for the head-to-head rows
$(BUILD)/bench/bench_dpdk: bench/bench_dpdk.c $(BENCH_DEPS) $(STATIC)
	@mkdir -p $(@D)
	$(call quiet,CC,$@)
	$(Q)$(CC) -std=gnu11 -Iinclude -Wall $(SANFLAGS) $(CFLAGS) $(shell pkg-config --cflags libdpdk) $< -o $@ \
		$(STATIC) $(shell pkg-config --libs libdpdk) $(LDLIBS)

# the same loops with mbufs: DPDK alone
$(BUILD)/bench/icount_dpdk: bench/icount.c $(BENCH_DEPS)
	@mkdir -p $(@D)
	$(call quiet,CC,$@)
	$(Q)$(CC) -std=gnu11 -Wall -DUSKB_ICOUNT_DPDK $(SANFLAGS) $(CFLAGS) \
		$(shell pkg-config --cflags libdpdk) $< -o $@ $(shell pkg-config --libs libdpdk) -lpthread

# ---- install ----

install: lib tools $(BPF_OBJS)
	@test -n "$(wildcard man/man3/*.3)" || { echo "no man pages" >&2; exit 1; }
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)/uskb $(DESTDIR)$(MANDIR)/man3 \
		$(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(BINDIR) $(DESTDIR)$(DATADIR)/uskb/pktgen
	install -m 755 $(TOOL_BINS) $(DESTDIR)$(BINDIR)/
	install -m 644 man/man8/*.8 $(DESTDIR)$(MANDIR)/man8/
	install -m 644 share/pktgen/*.sh $(DESTDIR)$(DATADIR)/uskb/pktgen/
	install -m 755 scripts/netns-veth.sh $(DESTDIR)$(DATADIR)/uskb/
	@# the script's XDP and tc programs (-x, -g, -s), where clang built them
	$(if $(BPF_OBJS),install -d $(DESTDIR)$(DATADIR)/uskb/bpf && \
		install -m 644 $(filter-out %/pktgen_live.o,$(BPF_OBJS)) $(DESTDIR)$(DATADIR)/uskb/bpf/)
	install -m 644 $(HEADERS) $(DESTDIR)$(INCLUDEDIR)/uskb/
	install -m 644 $(ALL_A) $(DESTDIR)$(LIBDIR)/
	install -m 755 $(SHARED) $(NETDEV_SO) $(PKTGEN_SO) $(VHOST_SO) $(DESTDIR)$(LIBDIR)/
	for l in libuskb libuskb-netdev libuskb-pktgen libuskb-vhost; do \
		ln -sf $$l.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$$l.so.$(SOVERSION); \
		ln -sf $$l.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$$l.so; done
	install -m 644 $(PCS) $(DESTDIR)$(LIBDIR)/pkgconfig/
	@# the live system (no DESTDIR) finds the new libraries at once
	@if [ -z "$(DESTDIR)" ] && command -v ldconfig >/dev/null; then echo ldconfig; ldconfig; fi
	@# pages as files, their other names as the same relative links as in the tree
	cd man/man3 && for f in *.3; do \
		if [ -L $$f ]; then ln -sfn $$(readlink $$f) $(DESTDIR)$(MANDIR)/man3/$$f; \
		else install -m 644 $$f $(DESTDIR)$(MANDIR)/man3/; fi; done

uninstall:
	rm -rf $(DESTDIR)$(INCLUDEDIR)/uskb
	rm -f $(DESTDIR)$(LIBDIR)/libuskb.* $(DESTDIR)$(LIBDIR)/libuskb-netdev.* \
		$(DESTDIR)$(LIBDIR)/libuskb-pktgen.* $(DESTDIR)$(LIBDIR)/libuskb-vhost.* \
		$(DESTDIR)$(LIBDIR)/pkgconfig/uskb*.pc
	cd man/man3 && for f in *.3; do rm -f $(DESTDIR)$(MANDIR)/man3/$$f; done
	cd man/man8 && for f in *.8; do rm -f $(DESTDIR)$(MANDIR)/man8/$$f; done
	rm -f $(patsubst $(BUILD)/tools/%,$(DESTDIR)$(BINDIR)/%,$(TOOL_BINS))
	rm -rf $(DESTDIR)$(DATADIR)/uskb

format:
	clang-format -i src/*/*.c src/*/*.h include/uskb/*.h test/*.c test/*.h test/helpers/*.c examples/*.c bench/*.c fuzz/*.c tools/pktgen/*.c tools/pktgen/*.h

clean:
	rm -rf build
