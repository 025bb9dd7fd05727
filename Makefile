# tidepool — one GNU Makefile.
# `make` builds build/tidepool; `make demo` runs an example session; `make test`
# runs every test; `make bench` measures. Missing Debian packages are installed
# by `make deps` (as root, with apt-get), which every target that needs them calls.

# ---- settings ---------------------------------------------------------------
CC        ?= cc
BUILD     ?= build
PKGS      := lua5.4 libseccomp jansson python3-embed
DEB_PKGS  := gcc make pkg-config liblua5.4-dev lua5.4 libseccomp-dev libjansson-dev \
             libpython3.11-dev python3.11 python3 python3-pytest clang libclang-rt-14-dev
PYTHON    := /usr/bin/python3
# Where code runs: common/ in every process, host/ in the host only, sandbox/ in
# the zygotes and workers, one directory per language layer (docs/architecture.md).
SRC_DIRS  := common host sandbox lua-sandbox py-sandbox
SANITIZE  ?=
WARN      := -std=c17 -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
             -Wformat=2 -Wno-format-nonliteral -Werror
OPT       ?= -O2 -g
# Recursively expanded: evaluated in recipes, after `deps` has run.
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS))
# The three libraries are linked statically: one mapping for all our code makes
# fork cheaper, and with -z now no worker pays a lazy-binding fault.
PKG_LIBS   = -Wl,-Bstatic -llua5.4 -ljansson -lseccomp -Wl,-Bdynamic -lpython3.11 -lm -ldl
CPPFLAGS  := -D_GNU_SOURCE $(addprefix -iquote ,$(SRC_DIRS))
CFLAGS     = $(OPT) $(WARN) -MMD -MP $(PKG_CFLAGS) $(SAN_FLAGS)
LDFLAGS    = $(SAN_FLAGS) -Wl,-z,now -Wl,-z,relro
# ---- SANITIZE settings (owner: hardening, docs/hardening.md) ----------------
# `make SANITIZE=address,undefined` builds into build-san/. UB is fatal (no
# recovery), so a test that triggers it fails. Sanitizer options are compiled in
# (tests/sanitize/san_options.c): the zygote is exec'd with an empty environment.
ifneq ($(SANITIZE),)
SAN_FLAGS := -fsanitize=$(SANITIZE) -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
             -DTP_SANITIZE=1
BUILD     := build-san
endif
# ---- end SANITIZE settings ---------------------------------------------------

# ---- FAILALLOC settings (owner: tests/faults, tests/soak) --------------------
# `make FAILALLOC=1` builds into $(BUILD)-failalloc/: every malloc, calloc and
# realloc reference (ours and the static jansson's) goes through the counter in
# host/failalloc.c, which only the host process arms (TIDEPOOL_FAILALLOC=N).
ifneq ($(FAILALLOC),)
FA_FLAGS  := -DTP_FAILALLOC=1 -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc
BUILD     := $(BUILD)-failalloc
CFLAGS    += $(FA_FLAGS)
LDFLAGS   += $(FA_FLAGS)
endif
# ---- end FAILALLOC settings ---------------------------------------------------

CORE_SRCS := $(wildcard $(SRC_DIRS:%=%/*.c))
CORE_SRCS := $(filter-out host/main.c,$(CORE_SRCS))
CORE_OBJS := $(CORE_SRCS:%.c=$(BUILD)/obj/%.o)
# ---- SANITIZE objects (owner: hardening) -------------------------------------
ifneq ($(SANITIZE),)
CORE_OBJS += $(BUILD)/obj/tests/sanitize/san_options.o
# Not instrumented: it runs inside the sanitizer's init, before shadow memory exists.
$(BUILD)/obj/tests/sanitize/san_options.o: SAN_FLAGS := -DTP_SANITIZE=1
endif
# ---- end SANITIZE objects ----------------------------------------------------
MAIN_OBJ  := $(BUILD)/obj/host/main.o
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)

.PHONY: all deps demo test unit proto bench clean format format-check
all: $(BUILD)/tidepool $(BUILD)/tidepool-python

# ---- dependencies -----------------------------------------------------------
deps: $(BUILD)/.deps
$(BUILD)/.deps:
	@missing=""; for p in $(DEB_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "make deps: installing$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "make deps: run as root to install:$$missing" >&2; exit 1; fi; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	fi
	@mkdir -p $(BUILD) && touch $@

# ---- build ------------------------------------------------------------------
$(BUILD)/obj/%.o: %.c | $(BUILD)/.deps
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(BUILD)/tidepool: $(MAIN_OBJ) $(CORE_OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

# The Python zygote's binary: the same code, with CPython from Debian's non-PIC
# static library. Debian's libpython3.11.so (PIC, semantic interposition) runs
# Python ~25 % slower than /usr/bin/python3.11, which is linked this way. It is
# not position-independent, so only the zygote and its workers run it (they are
# confined and share one layout by fork anyway); the host stays PIE. The host
# falls back to its own binary when this one is not beside it.
PY_STATIC  = /usr/lib/python3.11/config-3.11-x86_64-linux-gnu/libpython3.11.a
$(BUILD)/tidepool-python: $(MAIN_OBJ) $(CORE_OBJS)
	$(CC) $(LDFLAGS) -no-pie -Wl,-E -o $@ $^ -Wl,-Bstatic -llua5.4 -ljansson -lseccomp \
	  -Wl,-Bdynamic $(PY_STATIC) -lz -lexpat -lutil -lm -ldl -lpthread

$(BUILD)/tests/%: tests/unit/%.c $(CORE_OBJS) | $(BUILD)/.deps
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -Itests/unit -o $@ $< $(CORE_OBJS) $(PKG_LIBS)

# ---- run --------------------------------------------------------------------
demo: $(BUILD)/tidepool
	@sh tests/demo.sh $(BUILD)/tidepool

unit: $(UNIT_BINS)
	@set -e; for t in $(UNIT_BINS); do echo "== $$t"; $$t; done

proto: $(BUILD)/tidepool $(BUILD)/tidepool-python
	TIDEPOOL=$(CURDIR)/$(BUILD)/tidepool $(PYTHON) -m pytest -q tests/proto

test: unit proto

bench: $(BUILD)/tidepool $(BUILD)/tidepool-python
	TIDEPOOL=$(CURDIR)/$(BUILD)/tidepool $(PYTHON) tests/bench/bench.py

# py-sandbox/pyshim.c is generated from shim.py (gen_shim.py): left as generated.
FORMAT_SRCS = $(filter-out py-sandbox/pyshim.c,$(CORE_SRCS)) host/main.c \
              $(wildcard $(SRC_DIRS:%=%/*.h))
format:
	clang-format -i $(FORMAT_SRCS) $(wildcard tests/unit/*.[ch])
format-check:
	clang-format --dry-run --Werror $(FORMAT_SRCS)

clean:
	rm -rf build build-san

# ---- FAILALLOC, faults and soak (owner: tests/faults, tests/soak) -------------
# `make faults` runs tests/faults: fault injection against the real binary, a
# fake zygote whose workers misbehave (tests/faults/fake_tidepool.c, a test-only
# binary), and the allocation-failure replay against the FAILALLOC build.
# `make soak` runs SOAK_N mixed execs through one host (SOAK_N=10000 in CI).
# `make test QUICK=1` skips both.
SOAK_N    ?= 100000
SOAK_CI_N ?= 10000
FA_BIN    := $(if $(FAILALLOC),$(BUILD),$(BUILD)-failalloc)/tidepool
FAULT_ENV  = TIDEPOOL=$(CURDIR)/$(BUILD)/tidepool TIDEPOOL_FAKE=$(CURDIR)/$(BUILD)/tests/fake_tidepool \
             TIDEPOOL_FAILALLOC_BIN=$(CURDIR)/$(FA_BIN)
.PHONY: faults failalloc soak soak-ci clean-failalloc

$(BUILD)/tests/fake_tidepool: tests/faults/fake_tidepool.c $(CORE_OBJS) | $(BUILD)/.deps
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(CORE_OBJS) $(PKG_LIBS)

failalloc:
	$(MAKE) FAILALLOC=1 all

faults: $(BUILD)/tidepool $(BUILD)/tests/fake_tidepool failalloc
	$(FAULT_ENV) $(PYTHON) -m pytest -q tests/faults

soak: $(BUILD)/tidepool
	TIDEPOOL=$(CURDIR)/$(BUILD)/tidepool $(PYTHON) tests/soak/soak.py -n $(SOAK_N)

soak-ci: $(BUILD)/tidepool
	TIDEPOOL=$(CURDIR)/$(BUILD)/tidepool $(PYTHON) tests/soak/soak.py -n $(SOAK_CI_N)

ifeq ($(QUICK),)
test: faults soak-ci
endif

clean: clean-failalloc
clean-failalloc:
	rm -rf build-failalloc build-san-failalloc
# ---- end FAILALLOC, faults and soak ------------------------------------------

# ---- SANITIZE and fuzz targets (owner: hardening, docs/hardening.md) ---------
# `make test-sanitize` runs the C unit tests and the protocol suites against
# build-san/ (ASan + UBSan; LeakSanitizer in the host). `make fuzz` builds the
# libFuzzer harnesses of tests/fuzz/ with clang into build-fuzz/ and runs each
# for FUZZ_SECONDS; `make fuzz-regress` replays the checked-in corpora once.
# `make test` runs both after the normal tests; `make test QUICK=1` skips them.
SAN_DEFAULT   := address,undefined
FUZZ_CC       ?= clang
FUZZ_SECONDS  ?= 60
FUZZ_BUILD    := build-fuzz
FUZZ_NAMES    := proto worker_reply ljson
FUZZ_SAN      := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS    = -O1 -g $(filter-out -Werror,$(WARN)) -Wno-missing-field-initializers $(PKG_CFLAGS) \
                 $(FUZZ_SAN) -DTP_FUZZ=1
# The pure host modules (not the loop, the zygote or the worker) and the Lua JSON layer.
FUZZ_LIB_SRCS  = $(wildcard common/*.c) $(filter-out host/main.c host/host.c host/output.c host/pool.c host/zygote_ctl.c, \
                   $(wildcard host/*.c)) lua-sandbox/ljson.c lua-sandbox/lalloc.c
FUZZ_LIB_OBJS  = $(FUZZ_LIB_SRCS:%.c=$(FUZZ_BUILD)/obj/%.o)
FUZZ_BINS     := $(FUZZ_NAMES:%=$(FUZZ_BUILD)/fuzz_%)
# libFuzzer flags: small inputs (the parsers are line/frame-sized), a hang or
# 2 GiB of RSS is a finding too.
FUZZ_RUN_FLAGS = -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
                 -print_final_stats=1
.PHONY: test-sanitize fuzz fuzz-build fuzz-regress clean-hardening \
        hardening-tests

test-sanitize:
	$(MAKE) --no-print-directory SANITIZE=$(SAN_DEFAULT) unit build-san/tidepool
	TIDEPOOL=$(CURDIR)/build-san/tidepool PYTHONPATH=$(CURDIR)/tests/sanitize \
	  $(PYTHON) -m pytest -q -p pytest_sanitize tests/proto

$(FUZZ_BUILD)/obj/%.o: %.c | $(BUILD)/.deps
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_LIB_OBJS) | $(BUILD)/.deps
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_LIB_OBJS) \
	  -Wl,-Bstatic -llua5.4 -ljansson -lseccomp -Wl,-Bdynamic -lm -ldl

fuzz-build: $(FUZZ_BINS)
.SECONDARY: $(FUZZ_LIB_OBJS)

# One target per harness, so `make -j2 fuzz` runs two at a time. New inputs go
# to build-fuzz/corpus/<name>; crashes to build-fuzz/artifacts/<name>/.
fuzz-run-%: $(FUZZ_BUILD)/fuzz_%
	@mkdir -p $(FUZZ_BUILD)/corpus/$* $(FUZZ_BUILD)/artifacts/$*
	@echo "== fuzz $* for $(FUZZ_SECONDS) s"
	@$< $(FUZZ_RUN_FLAGS) $(if $(wildcard tests/fuzz/$*.dict),-dict=tests/fuzz/$*.dict) \
	  -artifact_prefix=$(FUZZ_BUILD)/artifacts/$*/ $(FUZZ_BUILD)/corpus/$* tests/fuzz/corpus/$* \
	  > $(FUZZ_BUILD)/fuzz-$*.log 2>&1 || { tail -60 $(FUZZ_BUILD)/fuzz-$*.log; exit 1; }
	@grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb)|DONE' $(FUZZ_BUILD)/fuzz-$*.log || true

fuzz: $(FUZZ_NAMES:%=fuzz-run-%)

fuzz-regress: $(FUZZ_BINS)
	@set -e; for n in $(FUZZ_NAMES); do echo "== replay tests/fuzz/corpus/$$n"; \
	  $(FUZZ_BUILD)/fuzz_$$n -runs=0 tests/fuzz/corpus/$$n 2>&1 | tail -1; done

# After the normal tests (also under -j): sanitizers, then the fuzz smoke run.
hardening-tests: unit proto
	$(MAKE) --no-print-directory test-sanitize
	$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(FUZZ_SECONDS)
ifeq ($(QUICK)$(SANITIZE),)
test: hardening-tests
endif

clean: clean-hardening
clean-hardening:
	rm -rf $(FUZZ_BUILD)
-include $(shell find $(FUZZ_BUILD) -name '*.d' 2>/dev/null)
# ---- end SANITIZE and fuzz targets -------------------------------------------

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
