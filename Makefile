# agenthub build.  `make` builds the three programs into build/; `make test`
# runs the unit suites, the same suites under ASan+UBSan, and the e2e suites.
#   make SAN=1        build with -fsanitize=address,undefined (into build-asan/)
#   make FAILPOINTS=1 compile in AGENTHUB_FAILPOINTS (into build-fp/)

CC ?= cc
PKGS := libnghttp2 libevent libevent_openssl openssl libprotobuf-c sqlite3 jansson zlib libnats
# libpq is dlopen()ed by the PostgreSQL store (src/store/postgres_lib.h), so
# no program links it; only its header at build time, and the tests, which
# talk to their PostgreSQL server directly.
PQ_CFLAGS := $(shell pkg-config --cflags libpq 2>/dev/null)
PQ_LIBS := $(shell pkg-config --libs libpq 2>/dev/null)
DEB_PACKAGES := build-essential pkg-config libnghttp2-dev libevent-dev libssl-dev \
  libhttp-parser-dev libprotobuf-c-dev protobuf-c-compiler protobuf-compiler libsqlite3-dev libpq-dev postgresql \
  libjansson-dev zlib1g-dev check python3 python3-grpcio python3-protobuf python3-h2 \
  python3-pytest nghttp2-client clang libclang-rt-14-dev clang-format \
  clang-tidy cppcheck valgrind openssl procps time curl \
  libgrpc++-dev protobuf-compiler-grpc g++ chromium chromium-driver python3-selenium \
  libnats-dev nats-server nftables liblmdb-dev
# Node.js for the e2e suites' npm clients, only where there is none: a
# machine whose nodejs package bundles npm (as NodeSource's does) conflicts
# with Debian's separate npm package.
NODE_DEB_PACKAGES := nodejs npm

ifeq ($(SAN),1)
BUILD ?= build-asan
OPT := -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
FAILPOINTS := 1
else ifeq ($(FAILPOINTS),1)
BUILD ?= build-fp
OPT := -O2
else
BUILD ?= build
OPT := -O2
endif

WARN := -Wall -Wextra -Werror -Wno-unused-parameter -Wshadow -Wstrict-prototypes
CFLAGS := -std=c11 -D_GNU_SOURCE -g $(OPT) $(WARN) -Isrc -Igen \
  $(shell pkg-config --cflags $(PKGS) 2>/dev/null) $(PQ_CFLAGS)
ifeq ($(FAILPOINTS),1)
CFLAGS += -DAGENTHUB_FAILPOINTS=1
endif
LDFLAGS := $(filter -fsanitize=%,$(OPT))
LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lhttp_parser -lpthread -lm
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null) $(PQ_LIBS)

PROTOS := $(shell cd proto && find . -name '*.proto' | sed 's|^\./||' | sort)
GEN_SRC := $(patsubst %.proto,gen/%.pb-c.c,$(PROTOS)) gen/descriptor_set.c
# The layers, lowest first (docs/architecture.md): each is one archive,
# $(BUILD)/libNAME.a, of every .c in src/NAME/ (common also holds gen/).  A
# layer whose directory does not exist yet is skipped, so a new layer is
# one word here and one row in tools/check_layers.py.  Programs link the
# archives highest first; a lower layer calling up fails to link.
LAYERS := $(foreach l,common web h2 http1 grpc core store cluster hub rpc,$(if $(wildcard src/$(l)/*.c),$(l)))
layer_src = $(sort $(wildcard src/$(1)/*.c)) $(if $(filter common,$(1)),$(GEN_SRC))
layer_lib = $(patsubst %,$(BUILD)/lib%.a,$(1))
reverse = $(if $(1),$(call reverse,$(wordlist 2,$(words $(1)),$(1))) $(firstword $(1)))
LIB_SRC := $(foreach l,$(LAYERS),$(call layer_src,$(l)))
# agenthubd links every layer; the CLI and the Runner talk to the server
# over gRPC and link no handler (rpc) or session-path (hub) object.
SERVER_LIBS := $(call layer_lib,$(call reverse,$(LAYERS)))
CLIENT_LIBS := $(call layer_lib,$(call reverse,$(filter-out hub rpc web,$(LAYERS))))

SERVER_SRC := src/main.c $(sort $(wildcard src/server/*.c))
CLI_SRC := $(sort $(wildcard src/cli/*.c))
RUNNER_SRC := $(sort $(wildcard src/runner/*.c))
# The Runner's and the CLI's modules without their mains, linked by their
# programs and by the unit suites (test_runner_*, test_cli_*).
RUNNER_LIB := $(BUILD)/librunner.a
RUNNER_LIB_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(filter-out src/runner/main.c,$(RUNNER_SRC)))
# agenthubd's own modules (src/server), for the unit suites (test_server_*).
SERVER_LIB := $(BUILD)/libserver.a
SERVER_LIB_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(sort $(wildcard src/server/*.c)))
CLI_LIB := $(BUILD)/libcli.a
CLI_LIB_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(filter-out src/cli/main.c,$(CLI_SRC)))
PROGRAMS := $(BUILD)/agenthubd $(BUILD)/agenthub $(BUILD)/agenthub-runner

# The pane page agenthubd serves: web/dist (committed, made by `make web`)
# as a C table generated at build time.
WEB_DIST := $(sort $(wildcard web/dist/*))
WEB_ASSETS_C := $(BUILD)/gen-web/web_assets.c
WEB_ASSETS_OBJ := $(BUILD)/obj/$(BUILD)/gen-web/web_assets.o
# What `make web` generates the page's protobuf code from.
WEB_PROTOS := compass/v1/frames.proto compass/v1/services.proto

# One runner for every unit suite: tests/unit/main.c runs the suites listed
# in tests/unit/test_list.h (each test_NAME.c exports NAME_suite()).
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
UNIT_HELPER_SRC := $(filter-out $(UNIT_SRC) tests/unit/main.c,$(wildcard tests/unit/*.c))
UNIT_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,tests/unit/main.c $(UNIT_SRC) $(UNIT_HELPER_SRC))
UNIT_BIN := $(BUILD)/tests/unit_tests
# The JSON codec's test driver (tests/e2e/test_json_codec.py) and its table
# of every generated message type.
JSON_DRIVER := $(BUILD)/tests/json_codec_driver
BENCH_SRC := $(sort $(wildcard bench/*.c))
BENCH_BIN := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))

.PHONY: all deps gen check-gen web web-bundle check-web screenshots test unit e2e run demo cluster-demo nemesis bench fuzz fuzz-smoke lint format clean
all: $(PROGRAMS) $(UNIT_BIN) $(JSON_DRIVER)

# Installs every Debian package the build, tests, lint and benchmarks need,
# unless every tool and library they use is already there; then the npm
# packages of the clients the e2e suites drive and of axe-core, which the
# page's tests inject into Chromium (tests/node, from its lock file, into
# tests/node/node_modules; nothing global), and the Claude agent
# SDK's hook types (tests/node/claude-sdk, without the SDK's native CLI).
DEP_COMMANDS := cc g++ pkg-config protoc protoc-c h2load clang clang-format clang-tidy \
  cppcheck valgrind openssl grpc_cpp_plugin /usr/bin/time curl chromium chromedriver nats-server nft
deps:
	@missing=0; \
	for c in $(DEP_COMMANDS); do command -v $$c >/dev/null 2>&1 || missing=1; done; \
	pkg-config --exists $(PKGS) libpq check grpc++ 2>/dev/null || missing=1; \
	[ -f /usr/include/http_parser.h ] || missing=1; \
	[ -f /usr/include/lmdb.h ] || missing=1; \
	[ -x /usr/lib/postgresql/15/bin/initdb ] || missing=1; \
	echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' | \
	  clang -x c - -fsanitize=fuzzer -o /dev/null 2>/dev/null || missing=1; \
	/usr/bin/python3 -c 'import grpc, h2, pytest, google.protobuf, selenium' 2>/dev/null || missing=1; \
	if [ $$missing = 0 ]; then \
	  echo "deps: already installed"; \
	else \
	  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $(DEB_PACKAGES); \
	fi
	@if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then \
	  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $(NODE_DEB_PACKAGES); \
	fi
	@tools/install_nats_server.sh
	@if [ tests/node/node_modules/.package-lock.json -nt tests/node/package-lock.json ]; then \
	  echo "deps: tests/node is installed"; \
	else \
	  cd tests/node && npm ci --no-audit --no-fund; \
	fi
	@if [ tests/node/claude-sdk/node_modules/.package-lock.json -nt \
	      tests/node/claude-sdk/package-lock.json ]; then \
	  echo "deps: tests/node/claude-sdk is installed"; \
	else \
	  cd tests/node/claude-sdk && npm ci --omit=optional --no-audit --no-fund; \
	fi
	@if [ web/node_modules/.package-lock.json -nt web/package-lock.json ]; then \
	  echo "deps: web is installed"; \
	else \
	  cd web && npm ci --no-audit --no-fund; \
	fi

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

define LAYER_RULE
$(call layer_lib,$(1)): $$(patsubst %.c,$$(BUILD)/obj/%.o,$$(call layer_src,$(1)))
	@rm -f $$@
	ar rcs $$@ $$^
endef
$(foreach l,$(LAYERS),$(eval $(call LAYER_RULE,$(l))))

$(BUILD)/agenthubd: $(patsubst %.c,$(BUILD)/obj/%.o,$(SERVER_SRC)) $(WEB_ASSETS_OBJ) $(SERVER_LIBS)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

$(WEB_ASSETS_C): $(WEB_DIST) tools/embed_web.sh
	@mkdir -p $(dir $@)
	tools/embed_web.sh web/dist > $@.tmp && mv $@.tmp $@
$(BUILD)/agenthub: $(BUILD)/obj/src/cli/main.o $(CLI_LIB) $(CLIENT_LIBS)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)
$(BUILD)/agenthub-runner: $(BUILD)/obj/src/runner/main.o $(RUNNER_LIB) $(CLIENT_LIBS)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

$(RUNNER_LIB): $(RUNNER_LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(SERVER_LIB): $(SERVER_LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(CLI_LIB): $(CLI_LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/obj/tests/unit/%.o: CFLAGS += -Itests/unit
$(UNIT_BIN): $(UNIT_OBJ) $(SERVER_LIB) $(CLI_LIB) $(RUNNER_LIB) $(SERVER_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(UNIT_OBJ) $(SERVER_LIB) $(CLI_LIB) $(RUNNER_LIB) $(SERVER_LIBS) \
	  $(CHECK_LIBS) $(LIBS)

$(BUILD)/tests/json_types.c: tools/json_types.sh $(GEN_SRC)
	@mkdir -p $(dir $@)
	tools/json_types.sh gen > $@
$(JSON_DRIVER): tests/drivers/json_codec_driver.c $(BUILD)/tests/json_types.c $(SERVER_LIBS)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LIBS)

$(BUILD)/bench/%: bench/%.c $(SERVER_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(SERVER_LIBS) $(LIBS)
# The session log's engine against LMDB (docs/durability.md): LMDB only here.
$(BUILD)/bench/log_engines: LIBS += -llmdb

# gen/ is committed.  `make gen` rewrites it; `make check-gen` fails when stale.
gen:
	rm -rf gen && mkdir -p gen
	protoc-c --c_out=gen -Iproto $(PROTOS)
	protoc --include_imports --descriptor_set_out=gen/descriptor_set.pb -Iproto $(PROTOS)
	tools/embed_bytes.sh gen/descriptor_set.pb agenthub_descriptor_set > gen/descriptor_set.c
	rm -f gen/descriptor_set.pb

check-gen:
	@rm -rf $(BUILD)/gen-check && mkdir -p $(BUILD)/gen-check
	@protoc-c --c_out=$(BUILD)/gen-check -Iproto $(PROTOS)
	@protoc --include_imports --descriptor_set_out=$(BUILD)/gen-check/descriptor_set.pb -Iproto $(PROTOS)
	@tools/embed_bytes.sh $(BUILD)/gen-check/descriptor_set.pb agenthub_descriptor_set > $(BUILD)/gen-check/descriptor_set.c
	@rm -f $(BUILD)/gen-check/descriptor_set.pb
	@diff -r gen $(BUILD)/gen-check >/dev/null || { echo "gen/ is stale: run 'make gen' and commit it" >&2; exit 1; }
	@echo "gen/ is up to date"

# web/dist is committed.  `make web` installs the page's npm packages from
# its lock file (into web/node_modules), generates its protobuf code with
# protoc-gen-es, type-checks it and bundles it with esbuild; `make
# check-web` rebuilds it elsewhere and fails when web/dist differs.
web:
	cd web && npm ci --no-audit --no-fund
	$(MAKE) web-bundle WEB_OUT=web/dist

web-bundle:
	rm -rf web/src/gen && mkdir -p web/src/gen
	protoc --plugin=protoc-gen-es=web/node_modules/.bin/protoc-gen-es --es_out=web/src/gen \
	  --es_opt=target=ts -Iproto $(WEB_PROTOS)
	web/node_modules/.bin/tsc -p web
	node web/build.mjs $(abspath $(WEB_OUT))

# PNGs of the page (the board on a desktop and a phone, light and dark; a
# pane) in headless Chromium against a demo world, into docs/screenshots.
screenshots: $(PROGRAMS)
	/usr/bin/python3 tools/screenshots.py $(BUILD) docs/screenshots

check-web:
	@rm -rf $(BUILD)/web-check && mkdir -p $(BUILD)/web-check
	@$(MAKE) -s web-bundle WEB_OUT=$(BUILD)/web-check >/dev/null
	@diff -r web/dist $(BUILD)/web-check >/dev/null || { echo "web/dist is stale: run 'make web' and commit it" >&2; exit 1; }
	@echo "web/dist is up to date"

unit: $(UNIT_BIN)
	@tests/run_unit.sh $(BUILD) /dev/null

e2e: 
	$(MAKE) SAN=1 all && tests/run_e2e.sh build-asan /dev/null

test:
	@tests/run_all.sh

bench: $(PROGRAMS) $(BENCH_BIN)

# Fuzzing (clang, libFuzzer).  The library, the pure CLI and Runner modules
# the targets reach and the fuzz helpers are compiled once, instrumented with
# -fsanitize=fuzzer-no-link, into one archive; each target links it with
# -fsanitize=fuzzer.  src/h2 is left out: fake_h2 stands in for it, in memory,
# in the target that drives the request path.
#   make fuzz         builds every target into build-fuzz/
#   make fuzz-smoke   runs each over its corpus (tests/fuzz/corpus/NAME) for
#                     FUZZ_SECONDS; fails on any crash, leak or timeout
FUZZ_BUILD := build-fuzz
FUZZ_SECONDS ?= 5
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer \
  -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all $(WARN) \
  -Isrc -Igen -Itests/unit -Itests/fuzz $(shell pkg-config --cflags $(PKGS) 2>/dev/null) \
  $(PQ_CFLAGS)
FUZZ_SRC := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BIN := $(patsubst tests/fuzz/%.c,$(FUZZ_BUILD)/%,$(FUZZ_SRC))
FUZZ_LIB_SRC := $(filter-out src/h2/%,$(LIB_SRC)) src/cli/hook_input.c src/cli/hook_map.c src/cli/mcp_proto.c src/runner/agent_frames.c \
  tests/unit/store_fixture.c tests/fuzz/store_template.c
FUZZ_LIB := $(FUZZ_BUILD)/libagenthub-fuzz.a

$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -MMD -MP -c -o $@ $<

# The member list is the Makefile's: rebuild the archive when it changes.
$(FUZZ_LIB): $(patsubst %.c,$(FUZZ_BUILD)/obj/%.o,$(FUZZ_LIB_SRC)) Makefile
	@rm -f $@
	ar rcs $@ $(filter %.o,$^)

$(FUZZ_BUILD)/fuzz_requests: $(FUZZ_BUILD)/obj/tests/fuzz/fake_h2.o
$(FUZZ_BUILD)/fuzz_%: $(FUZZ_BUILD)/obj/tests/fuzz/fuzz_%.o $(FUZZ_LIB)
	clang -fsanitize=fuzzer,address,undefined -o $@ $^ $(LIBS) $(PQ_LIBS)

fuzz: $(FUZZ_BIN)

fuzz-smoke: $(FUZZ_BIN)
	@tests/fuzz/smoke.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) /dev/null

# A newcomer's tour: agenthubd, agenthub-runner hosting sess-1 with the
# scripted agent, and a log follower showing the pane for about 15 s.
DEMO_SECONDS ?= 15
demo: $(PROGRAMS)
	@tests/agents/demo.sh $(BUILD) $(DEMO_SECONDS)

# Three NATS JetStream servers, three agenthubd nodes, the Runner through
# node 2, a pane on node 1; node 2 is killed midway (docs/cluster.md).
cluster-demo: $(PROGRAMS)
	@deploy/cluster/demo.sh $(BUILD) $(DEMO_SECONDS)

# The nemesis suite (tests/nemesis, docs/cluster.md): SEEDS seeds of
# NEMESIS_SECONDS of partitions, pauses and kills each against three NATS
# servers and three nodes in a network namespace; SEED=N replays N (and
# goes on from it).  Needs root.
SEEDS ?= 1
NEMESIS_SECONDS ?= 60
nemesis: $(PROGRAMS)
	@NEMESIS_SEEDS=$(SEEDS) NEMESIS_SECONDS=$(NEMESIS_SECONDS) $(if $(SEED),NEMESIS_SEED=$(SEED)) \
	  AGENTHUB_BUILD=$(BUILD) /usr/bin/python3 tests/nemesis/run.py

run: $(PROGRAMS)
	@mkdir -p var
	$(BUILD)/agenthub admin --db var/agenthub.db import deploy/demo-world.json
	$(BUILD)/agenthubd --db var/agenthub.db --listen 127.0.0.1:50051 \
	  --runner-listen 127.0.0.1:50052 --metrics-listen 127.0.0.1:9090

LINT_SRC := $(shell find src tests/unit tests/fuzz tests/drivers bench -name '*.[ch]' 2>/dev/null)
# tools/check_layers.py: the include graph (docs/architecture.md) and no
# handler or hub object in the CLI or the Runner.
lint: $(BUILD)/agenthub $(BUILD)/agenthub-runner $(call layer_lib,hub rpc)
	python3 tools/check_layers.py --nm $(BUILD)
	clang-format --dry-run --Werror $(LINT_SRC)
	cppcheck --quiet --error-exitcode=1 --enable=warning,performance,portability \
	  --suppress=missingIncludeSystem -Isrc -Igen src
	clang-tidy --quiet $(shell find src -name '*.c') -- $(CFLAGS)

format:
	clang-format -i $(LINT_SRC)

clean:
	rm -rf build build-asan build-fp build-fuzz

-include $(shell find $(BUILD)/obj $(FUZZ_BUILD)/obj -name '*.d' 2>/dev/null)
