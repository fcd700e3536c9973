# weft — plain Makefile.  `make` builds, `make test` runs every test,
# `make demo` starts a local cluster, `make bench` runs the benchmarks.
# Quiet unless V=1.  SAN=1 builds with ASan/UBSan into build/san.
#
# Order on a fresh machine (nothing of weft's dependencies installed):
#  1. Every goal but `clean` includes build/config.mk, and its rule runs
#     first, before anything is compiled: scripts/deps.sh installs the
#     missing Debian packages (nothing when all are there), then
#     scripts/config.sh asks pkg-config for every flag and fails naming any
#     package it cannot find.  The file is rewritten only when a flag changed.
#  2. When it was rewritten, make reads this file again (GNU make restarts
#     after remaking an included makefile), so no flag is ever computed
#     before the packages it comes from are installed.
#  3. Then the goals are built.
# tests/build/fresh_machine.sh checks this order on a copy of the tree.

.DEFAULT_GOAL := all

CC      ?= cc
CLANG   ?= clang
SAN     ?= 0
V       ?= 0
Q        = $(if $(filter 1,$(V)),,@)

ifeq ($(SAN),1)
BUILD   := build/san
SANFLAGS:= -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
OPT     := -O1 -g
else
BUILD   := build/release
SANFLAGS:=
OPT     := -O2 -g
endif

# build/config.mk defines PKG_CFLAGS, PKG_LIBS, AGENT_LIBS and CNI_LIBS.
CONFIG  := build/config.mk
NOCONFIG_GOALS := clean
ifneq ($(filter-out $(NOCONFIG_GOALS),$(or $(MAKECMDGOALS),all)),)
include $(CONFIG)
endif

# Always run: deps.sh is a no-op when everything is installed, and the
# file's date changes only with its content, so make restarts only then.
$(CONFIG): FORCE
	@mkdir -p $(dir $@)
	$(Q)bash scripts/deps.sh
	$(Q)bash scripts/config.sh > $@.tmp
	$(Q)if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi
FORCE:

CFLAGS_W := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wno-unused-parameter
CFLAGS   += -std=gnu11 $(OPT) $(CFLAGS_W) $(SANFLAGS) -D_GNU_SOURCE -MMD -MP \
            -Isrc $(PKG_CFLAGS)
LDFLAGS  += $(SANFLAGS)
LDLIBS   += $(PKG_LIBS) -lpthread -lm
CFLAGS   += -I. -I$(BPFOUT)

# modules: every .c is a library object except main.c, *_test.c, *_fuzz.c
srcs      = $(filter-out %/main.c %_test.c %_fuzz.c,$(wildcard src/$(1)/*.c))
objs      = $(patsubst src/%.c,$(BUILD)/obj/%.o,$(call srcs,$(1)))
MODULES  := lib model store controller ctl agent cni lb hollow
LIBOBJS  := $(foreach m,$(MODULES),$(call objs,$(m)))

# archive order = link order (a module before what it uses)
ARCHIVES := $(BUILD)/libweft_hollow.a $(BUILD)/libweft_controller.a $(BUILD)/libweft_ctl.a \
            $(BUILD)/libweft_agent.a $(BUILD)/libweft_cni.a $(BUILD)/libweft_lb.a \
            $(BUILD)/libweft_store.a $(BUILD)/libweft_model.a $(BUILD)/libweft_lib.a

# eBPF: one .bpf.c per attach point -> object -> libbpf skeleton header.
# BPF objects do not depend on SAN, so both builds share build/bpf.
BPFOUT   := build/bpf
BPFSRC   := $(wildcard bpf/*.bpf.c)
BPFOBJS  := $(patsubst bpf/%.bpf.c,$(BPFOUT)/%.bpf.o,$(BPFSRC))
BPFSKELS := $(patsubst bpf/%.bpf.c,$(BPFOUT)/%.skel.h,$(BPFSRC))
BPFHDRS  := $(wildcard bpf/*.h bpf/lib/*.h)
BPFCFLAGS:= -O2 -g -target bpf -D__TARGET_ARCH_x86 -I/usr/include/$(shell uname -m)-linux-gnu \
            -I. -Wall -Wextra -Werror -Wno-unused-parameter

BINS     := weft-controller weftctl weft-agent weft-cni weft-lb weft-hollow
SCRIPTS  := weft-lab
BINPATHS := $(addprefix $(BUILD)/bin/,$(BINS))
TESTSRC  := $(wildcard src/*/*_test.c)
TESTBINS := $(patsubst src/%_test.c,$(BUILD)/tests/%_test,$(TESTSRC))
BENCHSRC := $(wildcard bench/*/*.c)
BENCHBINS:= $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCHSRC))

.PHONY: all deps bpf test unit-bins fuzz demo bench clean FORCE
all: $(BINPATHS)
	$(Q)mkdir -p bin && for b in $(BINS); do ln -sf ../$(BUILD)/bin/$$b bin/$$b; done
	$(Q)for s in $(SCRIPTS); do ln -sf ../src/lab/$$s bin/$$s; done

# the packages are installed once build/config.mk is made (above)
deps:
	@:

$(BPFOUT)/%.bpf.o: bpf/%.bpf.c $(BPFHDRS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  BPF     $<")
	$(Q)$(CLANG) $(BPFCFLAGS) -c $< -o $@

$(BPFOUT)/%.skel.h: $(BPFOUT)/%.bpf.o
	@$(if $(Q),echo "  SKEL    $@")
	$(Q)bpftool gen skeleton $< name $(subst -,_,$*) > $@.tmp && mv $@.tmp $@

bpf: $(BPFSKELS)

# agent objects (and their tests) include the skeletons
$(call objs,agent) $(call objs,hollow) $(BUILD)/obj/agent/main.o $(BUILD)/obj/hollow/main.o $(filter $(BUILD)/tests/agent/%,$(TESTBINS)): | $(BPFSKELS)

$(BUILD)/obj/%.o: src/%.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

# Text the model carries (the OpenAPI schema files), as C made by
# scripts/embed.sh.  build/gen does not depend on SAN: every build shares it.
GEN          := build/gen
OPENAPI_YAML := $(sort $(wildcard src/model/openapi/*.yaml))
GENSRC       := $(GEN)/model/openapi_files.c
$(GEN)/model/openapi_files.c: $(OPENAPI_YAML) scripts/embed.sh
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  GEN     $@")
	$(Q)bash scripts/embed.sh model_openapi_files $(OPENAPI_YAML) > $@.tmp && mv $@.tmp $@

# The cluster page (src/controller/ui: HTML, CSS, JS), served by the controller
UI_FILES     := $(sort $(wildcard src/controller/ui/*))
GENSRC       += $(GEN)/controller/ui_files.c
$(GEN)/controller/ui_files.c: $(UI_FILES) scripts/embed.sh
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  GEN     $@")
	$(Q)bash scripts/embed.sh controller_ui_files $(UI_FILES) > $@.tmp && mv $@.tmp $@

$(BUILD)/obj/gen/%.o: $(GEN)/%.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/libweft_model.a: $(BUILD)/obj/gen/model/openapi_files.o
$(BUILD)/libweft_controller.a: $(BUILD)/obj/gen/controller/ui_files.o

define archive_rule
$(BUILD)/libweft_$(1).a: $(call objs,$(1))
	@mkdir -p $$(dir $$@)
	$(Q)rm -f $$@ && ar rcs $$@ $$^
endef
$(foreach m,$(MODULES),$(eval $(call archive_rule,$(m))))

$(BUILD)/bin/weft-controller: $(BUILD)/obj/controller/main.o $(ARCHIVES)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(ARCHIVES) $(LDLIBS)

$(BUILD)/bin/weftctl: $(BUILD)/obj/ctl/main.o $(ARCHIVES)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(ARCHIVES) $(LDLIBS)

$(BUILD)/bin/weft-agent: $(BUILD)/obj/agent/main.o $(ARCHIVES)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(ARCHIVES) $(LDLIBS) $(AGENT_LIBS)

# many hollow agents in one process: the agent's code, maps in memory
$(BUILD)/bin/weft-hollow: $(BUILD)/obj/hollow/main.o $(ARCHIVES)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(ARCHIVES) $(LDLIBS) $(AGENT_LIBS)

# the service engine: its module, lib and jansson
$(BUILD)/bin/weft-lb: $(BUILD)/obj/lb/main.o $(BUILD)/libweft_lb.a $(BUILD)/libweft_lib.a
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(BUILD)/libweft_lb.a $(BUILD)/libweft_lib.a $(LDLIBS)

# the CNI plugin runs once per pod start: it links only lib and jansson
$(BUILD)/bin/weft-cni: $(BUILD)/obj/cni/main.o $(BUILD)/libweft_cni.a $(BUILD)/libweft_lib.a
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -Wl,--as-needed -o $@ $< $(BUILD)/libweft_cni.a $(BUILD)/libweft_lib.a $(CNI_LIBS)

$(BUILD)/obj/test.o: tests/unit/test.c tests/unit/test.h
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -Itests/unit -c $< -o $@

$(BUILD)/tests/%_test: src/%_test.c $(BUILD)/obj/test.o $(ARCHIVES)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  TEST-LD $@")
	$(Q)$(CC) $(CFLAGS) -Itests/unit $(LDFLAGS) -o $@ $< $(BUILD)/obj/test.o $(ARCHIVES) $(LDLIBS) $(AGENT_LIBS)

$(BUILD)/bench/%: bench/%.c $(ARCHIVES)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  BENCH   $@")
	$(Q)$(CC) $(CFLAGS) -Itests/unit $(LDFLAGS) -o $@ $< $(ARCHIVES) $(LDLIBS) $(AGENT_LIBS)

# fuzzers: clang libFuzzer, short runs in `make test`
FUZZSRC  := $(wildcard src/*/*_fuzz.c)
FUZZBINS := $(patsubst src/%_fuzz.c,build/fuzz/%_fuzz,$(FUZZSRC))
FUZZLIBSRC := $(foreach m,lib model controller store,$(call srcs,$(m))) src/agent/cni_server.c $(GENSRC)
build/fuzz/%_fuzz: src/%_fuzz.c $(FUZZLIBSRC)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZ-LD $@")
	$(Q)$(CLANG) -std=gnu11 -g -O1 -D_GNU_SOURCE -Isrc $(PKG_CFLAGS) \
	  -fsanitize=fuzzer,address,undefined -o $@ $< $(FUZZLIBSRC) $(LDLIBS)

fuzz: $(FUZZBINS)

# the sanitizer build of every test and daemon, which tests/run runs
unit-bins:
	$(Q)$(MAKE) --no-print-directory SAN=1 $(patsubst src/%_test.c,build/san/tests/%_test,$(TESTSRC)) \
	  $(addprefix build/san/bin/,$(BINS))

test: unit-bins
	$(Q)$(MAKE) --no-print-directory $(FUZZBINS)
	$(Q)bash tests/run

bench: all $(BENCHBINS)
	$(Q)bash bench/run

demo: all
	$(Q)bash scripts/demo.sh

clean:
	rm -rf build bin

-include $(shell find build -name '*.d' 2>/dev/null)
