# SPDX-License-Identifier: LGPL-2.1-or-later
# moat — one GNU Makefile. Sources are discovered by wildcard so adding a file
# needs no edit here. `make check` is the one test command.

BUILD ?= release
ifeq ($(BUILD),san)
O ?= build-san
else ifeq ($(BUILD),fuzz)
O ?= build-fuzz
else
O ?= build
endif

CC ?= cc
# BUILD=fuzz (used by `make fuzz`): clang, every object instrumented for
# libFuzzer and built under ASan + UBSan once, the fuzz targets linked with
# libFuzzer's main against that one library.
ifeq ($(BUILD),fuzz)
CC := clang
endif
# The executable links only the core libraries; OpenSSL and libnftables are
# linked into the network plugins moat-net.so and moat-nft.so, loaded for
# --net allow only (src/network/net_plugin.h, net_loader.c). The library, unit
# tests and fuzz targets link all.
PKGS_CORE := jansson libseccomp nettle libpsl
PKGS_NET := openssl
PKGS_NFT := libnftables
# The front of `moat serve` (src/serve/, its own executable moat-serve-front):
# libmicrohttpd, and OpenSSL's libssl for --tls-cert, are linked there only
# (libmicrohttpd itself links GnuTLS, whose TLS the front does not use).
PKGS_HTTP := libmicrohttpd
# --image's unpacker (src/image/image_unpack.c) dlopens libarchive when it
# unpacks a layer: moat itself does not link it (every other start maps libc
# alone; the vm level's initramfs carries moat with libc only). The unit
# tests link it (LIBS_ARCHIVE).
PKGS_ARCHIVE := libarchive

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wformat=2 -Wimplicit-fallthrough -Wvla -Wundef -Wno-unused-parameter \
	-Wpointer-arith -Wcast-qual -Wwrite-strings -Wnull-dereference
HARDEN := -fstack-protector-strong -fstack-clash-protection -fPIE -fno-strict-aliasing
CPPFLAGS += -D_GNU_SOURCE -Iinclude -Isrc -Itests -MMD -MP
CFLAGS ?= -O2 -g
CFLAGS += -std=gnu17 $(WARN) $(HARDEN)
LDFLAGS += -pie -Wl,-z,relro,-z,now -Wl,--as-needed
ifeq ($(BUILD),san)
CFLAGS += -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS += -fsanitize=address,undefined
else ifeq ($(BUILD),fuzz)
# clang may warn where gcc does not: the fuzz build reports, `make lint` and
# the gcc builds are where warnings fail.
CFLAGS += -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=undefined -Wno-error
LDFLAGS += -fsanitize=address,undefined
FUZZ_MAIN :=
FUZZ_LINK := -fsanitize=fuzzer
else
CPPFLAGS += -D_FORTIFY_SOURCE=2
endif
# Fuzz targets: with gcc they link a replay driver that runs every file of
# fuzz/corpus/<target>/ once (make check); BUILD=fuzz links libFuzzer instead.
FUZZ_MAIN ?= fuzz/replay.c
FUZZ_LINK ?=
LIBS_CORE := $(shell pkg-config --libs $(PKGS_CORE) 2>/dev/null || echo -ljansson -lseccomp -lnettle -lpsl)
LIBS_NET := $(shell pkg-config --libs $(PKGS_NET) 2>/dev/null || echo -lssl -lcrypto)
LIBS_NFT := $(shell pkg-config --libs $(PKGS_NFT) 2>/dev/null || echo -lnftables)
LIBS_HTTP := $(shell pkg-config --libs $(PKGS_HTTP) 2>/dev/null || echo -lmicrohttpd)
# libarchive: only the unit tests, to read back what moat writes (test_vm.c)
LIBS_ARCHIVE := $(shell pkg-config --libs $(PKGS_ARCHIVE) 2>/dev/null || echo -larchive)
LIBS := $(LIBS_CORE) $(LIBS_NET) $(LIBS_NFT)
# The executable takes jansson, libseccomp, nettle and libpsl (with libidn2
# and libunistring, which it needs) from their static
# archives (Debian's -dev packages): three fewer libraries for the dynamic
# loader on every start (~0.15-0.4 ms, issue 9); the plugins link their own. A security update of one of them
# then needs a rebuild of moat; STATIC_LIBS=0 links them dynamically.
STATIC_LIBS ?= 1
ifeq ($(STATIC_LIBS),1)
MOAT_LIBS := -Wl,-Bstatic $(LIBS_CORE) -lidn2 -lunistring -Wl,-Bdynamic \
	-Wl,--exclude-libs,libjansson.a:libseccomp.a:libnettle.a:libpsl.a:libidn2.a:libunistring.a
else
MOAT_LIBS := $(LIBS_CORE)
endif

LIB_SRCS := $(wildcard src/shared/*.c src/policy/*.c src/supervisor/*.c src/sandbox/*.c src/kernel/*.c src/limits/*.c src/network/*.c src/workspace/*.c src/audit/*.c src/mcp/*.c src/doctor/*.c src/api/*.c src/oci/*.c src/image/*.c src/proxy/*.c)
CLI_SRCS := $(wildcard src/cli/*.c)
UNIT_SRCS := $(wildcard tests/unit/*.c) tests/harness/tap.c
FUZZ_SRCS := $(wildcard fuzz/fuzz_*.c)
PROBE_SRCS := $(wildcard tests/redteam/probes/*.c)

# The library is compiled once, position-independent with hidden visibility
# ($(O)/pic/): the same objects go into libmoat.a, the executable and, from
# libmoat-core.a, into each plugin, which links its own copy of what it needs
# and exports only its entry (src/network/moat-*.map). The executable exports
# nothing: no plugin binds to its symbols (scripts/check-plugin-syms.sh).
LIB_OBJS := $(LIB_SRCS:%.c=$(O)/pic/%.o) $(O)/gen/seccomp_baked.o
# What only --net allow uses; the rule parsers and the decision engine
# (addr.c, hostmatch.c, decide.c) stay in the core: rules are checked before
# clone, the plugin is loaded after it. So does the DNS query parser (dns.c):
# --net none names the queries it records (netrec.c). The supervisor's side
# (supervise_net.c) is core too: it calls moat-net.so through its table.
NET_SRCS := src/network/net_plugin.c \
	$(filter-out src/proxy/addr.c src/proxy/hostmatch.c src/proxy/decide.c src/proxy/dns.c,$(wildcard src/proxy/*.c))
NET_PIC_OBJS := $(NET_SRCS:%.c=$(O)/pic/%.o)
# The nftables part, loaded by the sandbox init's network child.
NFT_SRCS := src/network/nft_plugin.c src/network/netns.c
NFT_PIC_OBJS := $(NFT_SRCS:%.c=$(O)/pic/%.o)
CORE_OBJS := $(filter-out $(NET_PIC_OBJS) $(NFT_PIC_OBJS),$(LIB_OBJS))
CLI_OBJS := $(CLI_SRCS:%.c=$(O)/%.o)
UNIT_OBJS := $(UNIT_SRCS:%.c=$(O)/%.o)
FUZZ_BINS := $(FUZZ_SRCS:fuzz/%.c=$(O)/fuzz/%)
PROBE_BINS := $(PROBE_SRCS:tests/redteam/probes/%.c=$(O)/probes/%)
# The same probe sources, each compiled once more with main renamed, linked
# into moat itself for `moat __probe` (src/cli/selftest.c; table generated),
# which the battery of `moat selftest` (src/doctor/selftest.c) runs.
PROBE_NAMES := $(PROBE_SRCS:tests/redteam/probes/%.c=%)
PROBE_OBJS := $(PROBE_NAMES:%=$(O)/probeobj/%.o) $(O)/gen/probes_table.o

MOAT := $(O)/moat
SERVE_SRCS := $(wildcard src/serve/*.c)
SERVE_OBJS := $(SERVE_SRCS:%.c=$(O)/%.o)
SERVE_FRONT := $(O)/moat-serve-front
MOAT_NET := $(O)/moat-net.so
MOAT_NFT := $(O)/moat-nft.so
LIBMOAT := $(O)/libmoat.a
LIBMOAT_CORE := $(O)/libmoat-core.a

# The test build: the same sources compiled once more with -DMOAT_TESTING into
# $(O)/test/, linked into $(O)/test/moat-testing with its own plugins next to
# it. Only this binary has the test switches (--test-disable-layer, the
# MOAT_TEST_STALL_AT hook, both behind MOAT_TEST_LAYERS=1); the tests that
# need them run it (MOAT_TESTING_BIN). It is never installed: $(MOAT) has no
# such code (tests/integration/shipped.sh scans it).
TO := $(O)/test
TEST_CPPFLAGS := -DMOAT_TESTING
MOAT_TESTING := $(TO)/moat-testing
TEST_CORE_OBJS := $(patsubst $(O)/%,$(TO)/%,$(filter-out $(O)/gen/%,$(CORE_OBJS))) \
	$(O)/gen/seccomp_baked.o
TEST_CLI_OBJS := $(CLI_SRCS:%.c=$(TO)/%.o)
TEST_NET_PIC_OBJS := $(NET_SRCS:%.c=$(TO)/pic/%.o)
TEST_NFT_PIC_OBJS := $(NFT_SRCS:%.c=$(TO)/pic/%.o)

.PHONY: all deps check demo bench fuzz fuzz-bins lint format clean install uninstall
all: $(MOAT) $(SERVE_FRONT) $(TO)/moat-serve-front $(MOAT_NET) $(MOAT_NFT) $(O)/plugins.checked $(O)/unit-tests $(FUZZ_BINS) $(PROBE_BINS) \
	$(MOAT_TESTING) $(TO)/plugins.checked $(O)/env.checked $(O)/testbin/lifecycle_probe $(O)/cli-includes.checked \
	$(O)/callgraph.checked

$(O)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(LIBMOAT): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

$(O)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -fPIC -fvisibility=hidden -c $< -o $@

$(LIBMOAT_CORE): $(CORE_OBJS)
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

# The executable takes from the core what it calls, and exports nothing.
$(MOAT): $(CLI_OBJS) $(PROBE_OBJS) $(LIBMOAT_CORE) | $(MOAT_NET) $(MOAT_NFT)
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJS) $(PROBE_OBJS) $(LIBMOAT_CORE) $(MOAT_LIBS)

# The front of `moat serve`: found next to moat (or ../lib/moat/) by the back.
$(SERVE_FRONT): $(SERVE_OBJS) $(LIBMOAT_CORE)
	$(CC) $(LDFLAGS) -o $@ $(SERVE_OBJS) $(LIBMOAT_CORE) $(LIBS_HTTP) $(LIBS_NET) $(LIBS_CORE)

$(TO)/moat-serve-front: $(SERVE_FRONT)
	@mkdir -p $(dir $@)
	cp $< $@

# Each plugin: its own objects and what they need of the core; only its
# entry is exported (the version script makes everything else local).
PLUGIN_LDFLAGS = $(filter-out -pie,$(LDFLAGS)) -shared -Wl,--no-undefined
$(MOAT_NET): $(NET_PIC_OBJS) $(LIBMOAT_CORE) src/network/moat-net.map
	$(CC) $(PLUGIN_LDFLAGS) -Wl,--version-script=src/network/moat-net.map -o $@ $(NET_PIC_OBJS) \
		$(LIBMOAT_CORE) $(LIBS_NET) $(LIBS_CORE)

# The shipped build reads no environment variable but the user's own (no
# switches): every getenv() as the shipped build compiles it is checked.
$(O)/env.checked: $(LIB_SRCS) $(CLI_SRCS) $(wildcard src/*/*.h include/moat/*.h) scripts/check-env.sh
	@mkdir -p $(dir $@)
	scripts/check-env.sh "$(CC) $(filter-out -MMD -MP,$(CPPFLAGS))" $(LIB_SRCS) $(CLI_SRCS)
	@touch $@

# src/cli includes only moat/moat.h and its own headers (also in make lint).
$(O)/cli-includes.checked: $(wildcard src/cli/*.c src/cli/*.h) scripts/check-cli-includes.sh
	@mkdir -p $(dir $@)
	scripts/check-cli-includes.sh --control
	scripts/check-cli-includes.sh
	@touch $@

# No call cycle among the lifecycle and the layers (from the objects).
$(O)/callgraph.checked: $(LIB_OBJS) scripts/check-callgraph.sh
	scripts/check-callgraph.sh --control
	scripts/check-callgraph.sh $(O)/pic
	@touch $@

$(O)/plugins.checked: $(MOAT) $(MOAT_NET) $(MOAT_NFT) scripts/check-plugin-syms.sh
	scripts/check-plugin-syms.sh --control "$(CC)"
	scripts/check-plugin-syms.sh $(MOAT) $(MOAT_NET) $(MOAT_NFT)
	@touch $@

$(MOAT_NFT): $(NFT_PIC_OBJS) $(LIBMOAT_CORE) src/network/moat-nft.map
	$(CC) $(PLUGIN_LDFLAGS) -Wl,--version-script=src/network/moat-nft.map -o $@ $(NFT_PIC_OBJS) \
		$(LIBMOAT_CORE) $(LIBS_NFT) $(LIBS_CORE)

# The test build (see TO above): the same rules with -DMOAT_TESTING.
$(TO)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(TEST_CPPFLAGS) $(CFLAGS) -c $< -o $@

$(TO)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(TEST_CPPFLAGS) $(CFLAGS) -fPIC -fvisibility=hidden -c $< -o $@

$(TO)/libmoat-core.a: $(TEST_CORE_OBJS)
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

$(MOAT_TESTING): $(TEST_CLI_OBJS) $(PROBE_OBJS) $(TO)/libmoat-core.a | $(TO)/moat-net.so $(TO)/moat-nft.so
	$(CC) $(LDFLAGS) -o $@ $(TEST_CLI_OBJS) $(PROBE_OBJS) $(TO)/libmoat-core.a $(MOAT_LIBS)

$(TO)/moat-net.so: $(TEST_NET_PIC_OBJS) $(TO)/libmoat-core.a src/network/moat-net.map
	$(CC) $(PLUGIN_LDFLAGS) -Wl,--version-script=src/network/moat-net.map -o $@ $(TEST_NET_PIC_OBJS) \
		$(TO)/libmoat-core.a $(LIBS_NET) $(LIBS_CORE)

$(TO)/moat-nft.so: $(TEST_NFT_PIC_OBJS) $(TO)/libmoat-core.a src/network/moat-nft.map
	$(CC) $(PLUGIN_LDFLAGS) -Wl,--version-script=src/network/moat-nft.map -o $@ $(TEST_NFT_PIC_OBJS) \
		$(TO)/libmoat-core.a $(LIBS_NFT) $(LIBS_CORE)

$(TO)/plugins.checked: $(MOAT_TESTING) $(TO)/moat-net.so $(TO)/moat-nft.so scripts/check-plugin-syms.sh
	scripts/check-plugin-syms.sh $(MOAT_TESTING) $(TO)/moat-net.so $(TO)/moat-nft.so
	@touch $@

# Programs the integration tests drive libmoat with (tests/integration/*_probe.c).
$(O)/testbin/%: tests/integration/%.c $(LIBMOAT)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -Wno-write-strings $(LDFLAGS) -o $@ $< $(LIBMOAT) $(LIBS)

$(O)/unit-tests: $(UNIT_OBJS) $(LIBMOAT)
	$(CC) $(LDFLAGS) -o $@ $(UNIT_OBJS) $(LIBMOAT) $(LIBS) $(LIBS_ARCHIVE)

# Fuzz targets (see FUZZ_MAIN): each links the one library, nothing is
# compiled again per target.
$(O)/fuzz/%: fuzz/%.c $(FUZZ_MAIN) $(LIBMOAT)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) $(FUZZ_LINK) -o $@ $< $(FUZZ_MAIN) $(LIBMOAT) $(LIBS)

fuzz-bins: $(FUZZ_BINS)

# Red-team probes are static so they run inside any root (also --rootfs).
$(O)/probes/%: tests/redteam/probes/%.c tests/redteam/probes/probe.h
	@mkdir -p $(dir $@)
	$(CC) $(PROBE_CFLAGS) -static -o $@ $<

PROBE_CFLAGS := -D_GNU_SOURCE -std=gnu17 -O1 -g -Wall -Wno-unused-result
$(O)/probeobj/%.o: tests/redteam/probes/%.c tests/redteam/probes/probe.h
	@mkdir -p $(dir $@)
	$(CC) $(PROBE_CFLAGS) -fPIE -Dmain=moat_probe_$* -c -o $@ $<

$(O)/gen/probes_table.c: $(PROBE_SRCS) scripts/gen-probes-table.sh
	@mkdir -p $(dir $@)
	scripts/gen-probes-table.sh $(PROBE_NAMES) >$@.tmp && mv $@.tmp $@

# The default seccomp programs, compiled by libseccomp at build time
# (scripts/gen-seccomp.c; checked against fresh compilations in the unit tests).
$(O)/gen/gen-seccomp: scripts/gen-seccomp.c src/kernel/seccomp.c src/kernel/seccomp.h src/shared/macro.h
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -MMD -MP,$(CPPFLAGS)) $(CFLAGS) $(LDFLAGS) -o $@ scripts/gen-seccomp.c \
		src/kernel/seccomp.c $(LIBS_CORE)

$(O)/gen/seccomp_baked.c: $(O)/gen/gen-seccomp
	$(O)/gen/gen-seccomp >$@.tmp && mv $@.tmp $@

$(O)/gen/seccomp_baked.o: $(O)/gen/seccomp_baked.c src/kernel/seccomp.h
	$(CC) $(filter-out -MMD -MP,$(CPPFLAGS)) $(CFLAGS) -fPIC -fvisibility=hidden -c $< -o $@

$(O)/gen/probes_table.o: $(O)/gen/probes_table.c src/cli/probes.h
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

deps:
	@scripts/deps.sh

check: deps
	@$(MAKE) --no-print-directory all
	@O=$(O) BUILD=$(BUILD) tests/run-all.sh

demo: deps
	@$(MAKE) --no-print-directory $(MOAT)
	@O=$(O) examples/demo.sh

bench: deps
	@$(MAKE) --no-print-directory $(MOAT)
	@O=$(O) bench/run-all.sh

# `make fuzz`: every fuzz/fuzz_*.c built with libFuzzer (BUILD=fuzz, in
# build-fuzz/) and run for FUZZ_SECONDS each from its committed corpus; a
# crash fails with the path of the input that caused it.
FUZZ_SECONDS ?= 30
fuzz: deps
	@$(MAKE) --no-print-directory BUILD=fuzz O=build-fuzz fuzz-bins
	@O=build-fuzz FUZZ_SECONDS=$(FUZZ_SECONDS) fuzz/run-fuzz.sh

lint:
	@scripts/lint.sh

format:
	clang-format -i $$(git ls-files -co --exclude-standard '*.c' '*.h')

clean:
	rm -rf build build-san build-fuzz

# `make install` (PREFIX, DESTDIR): moat in bin/, its two plugins in
# lib/moat/ (where the loader looks, ../lib/moat/ from the executable, and
# nowhere else: net_loader.c), the man pages (man/, kept in sync with
# `moat help` by tests/integration/install.sh) and the bash and zsh
# completion; moat serve's front (moat-serve-front) beside the plugins, where
# the back looks for it, and moat-oci, the name engines call the OCI runtime
# by, as a link to moat. Every file mode 0755/0644, no group or other write.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
PLUGINDIR ?= $(PREFIX)/lib/moat
MANDIR ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/site-functions
INSTALL ?= install
MAN_PAGES := $(wildcard man/*.1)
INSTALLED := $(BINDIR)/moat $(BINDIR)/moat-oci $(PLUGINDIR)/moat-net.so $(PLUGINDIR)/moat-nft.so \
	$(PLUGINDIR)/moat-serve-front \
	$(MAN_PAGES:man/%=$(MANDIR)/man1/%) $(BASHCOMPDIR)/moat $(ZSHCOMPDIR)/_moat

install: $(MOAT) $(MOAT_NET) $(MOAT_NFT) $(SERVE_FRONT)
	$(INSTALL) -d -m 0755 $(DESTDIR)$(BINDIR) $(DESTDIR)$(PLUGINDIR) $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR)
	$(INSTALL) -m 0755 $(MOAT) $(DESTDIR)$(BINDIR)/moat
	ln -sf moat $(DESTDIR)$(BINDIR)/moat-oci
	$(INSTALL) -m 0644 $(MOAT_NET) $(MOAT_NFT) $(DESTDIR)$(PLUGINDIR)/
	$(INSTALL) -m 0755 $(SERVE_FRONT) $(DESTDIR)$(PLUGINDIR)/moat-serve-front
	$(INSTALL) -m 0644 $(MAN_PAGES) $(DESTDIR)$(MANDIR)/man1/
	$(INSTALL) -m 0644 completion/moat.bash $(DESTDIR)$(BASHCOMPDIR)/moat
	$(INSTALL) -m 0644 completion/_moat $(DESTDIR)$(ZSHCOMPDIR)/_moat

uninstall:
	rm -f $(INSTALLED:%=$(DESTDIR)%)
	-rmdir $(DESTDIR)$(PLUGINDIR) 2>/dev/null

-include $(LIB_OBJS:.o=.d) $(CLI_OBJS:.o=.d) $(SERVE_OBJS:.o=.d) $(UNIT_OBJS:.o=.d) \
	$(TEST_CORE_OBJS:.o=.d) $(TEST_CLI_OBJS:.o=.d) $(TEST_NET_PIC_OBJS:.o=.d) $(TEST_NFT_PIC_OBJS:.o=.d)
