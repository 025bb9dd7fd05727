# tidepool — one GNU Makefile.
# `make` builds build/tidepool; `make demo` runs an example session; `make test`
# runs every test; `make bench` measures. Missing Debian packages are installed
# by `make deps` (as root, with apt-get), which every target that needs them calls.

# ---- settings ---------------------------------------------------------------
CC        ?= cc
BUILD     ?= build
PKGS      := lua5.4 libseccomp jansson python3-embed
DEB_PKGS  := gcc make pkg-config liblua5.4-dev lua5.4 libseccomp-dev libjansson-dev \
             libpython3.11-dev python3.11 python3 python3-pytest
PYTHON    := /usr/bin/python3
SANITIZE  ?=
WARN      := -std=c17 -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
             -Wformat=2 -Wno-format-nonliteral -Werror
OPT       ?= -O2 -g
# Recursively expanded: evaluated in recipes, after `deps` has run.
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS))
# The three libraries are linked statically: one mapping for all our code makes
# fork cheaper, and with -z now no worker pays a lazy-binding fault.
PKG_LIBS   = -Wl,-Bstatic -llua5.4 -ljansson -lseccomp -Wl,-Bdynamic -lpython3.11 -lm -ldl
CPPFLAGS  := -D_GNU_SOURCE -iquote host -iquote lua-sandbox -iquote py-sandbox
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

CORE_SRCS := $(wildcard host/*.c lua-sandbox/*.c py-sandbox/*.c)
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
all: $(BUILD)/tidepool

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

$(BUILD)/tests/%: tests/unit/%.c $(CORE_OBJS) | $(BUILD)/.deps
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -Itests/unit -o $@ $< $(CORE_OBJS) $(PKG_LIBS)

# ---- run --------------------------------------------------------------------
demo: $(BUILD)/tidepool
	@sh tests/demo.sh $(BUILD)/tidepool

unit: $(UNIT_BINS)
	@set -e; for t in $(UNIT_BINS); do echo "== $$t"; $$t; done

proto: $(BUILD)/tidepool
	TIDEPOOL=$(CURDIR)/$(BUILD)/tidepool $(PYTHON) -m pytest -q tests/proto

test: unit proto

bench: $(BUILD)/tidepool
	TIDEPOOL=$(CURDIR)/$(BUILD)/tidepool $(PYTHON) tests/bench/bench.py

format:
	clang-format -i $(CORE_SRCS) host/main.c $(wildcard host/*.h lua-sandbox/*.h tests/unit/*.[ch])
format-check:
	clang-format --dry-run --Werror $(CORE_SRCS) host/main.c $(wildcard host/*.h lua-sandbox/*.h)

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

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
