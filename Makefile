# weft — plain Makefile.  `make` builds, `make test` runs every test,
# `make demo` starts a local cluster, `make bench` runs the benchmarks.
# Quiet unless V=1.  SAN=1 builds with ASan/UBSan into build/san.

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

PKGS     := jansson libfyaml libmicrohttpd libcurl sqlite3
CFLAGS_W := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wno-unused-parameter
CFLAGS   += -std=gnu11 $(OPT) $(CFLAGS_W) $(SANFLAGS) -D_GNU_SOURCE -MMD -MP \
            -Isrc $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDFLAGS  += $(SANFLAGS)
LDLIBS   += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lpthread -lm

# modules: every .c is a library object except main.c, *_test.c, *_fuzz.c
srcs      = $(filter-out %/main.c %_test.c %_fuzz.c,$(wildcard src/$(1)/*.c))
objs      = $(patsubst src/%.c,$(BUILD)/obj/%.o,$(call srcs,$(1)))
MODULES  := lib model store controller ctl
LIBOBJS  := $(foreach m,$(MODULES),$(call objs,$(m)))

# archive order = link order (a module before what it uses)
ARCHIVES := $(BUILD)/libweft_controller.a $(BUILD)/libweft_ctl.a \
            $(BUILD)/libweft_store.a $(BUILD)/libweft_model.a $(BUILD)/libweft_lib.a

BINS     := weft-controller weftctl
BINPATHS := $(addprefix $(BUILD)/bin/,$(BINS))
TESTSRC  := $(wildcard src/*/*_test.c)
TESTBINS := $(patsubst src/%_test.c,$(BUILD)/tests/%_test,$(TESTSRC))
BENCHSRC := $(wildcard bench/*/*.c)
BENCHBINS:= $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCHSRC))

.PHONY: all deps test unit api e2e fuzz demo bench clean
all: deps $(BINPATHS)
	$(Q)mkdir -p bin && for b in $(BINS); do ln -sf ../$(BUILD)/bin/$$b bin/$$b; done

deps:
	$(Q)bash scripts/deps.sh

$(BUILD)/obj/%.o: src/%.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

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

$(BUILD)/obj/test.o: tests/unit/test.c tests/unit/test.h
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -Itests/unit -c $< -o $@

$(BUILD)/tests/%_test: src/%_test.c $(BUILD)/obj/test.o $(ARCHIVES)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  TEST-LD $@")
	$(Q)$(CC) $(CFLAGS) -Itests/unit $(LDFLAGS) -o $@ $< $(BUILD)/obj/test.o $(ARCHIVES) $(LDLIBS)

$(BUILD)/bench/%: bench/%.c $(ARCHIVES)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  BENCH   $@")
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(ARCHIVES) $(LDLIBS)

# fuzzers: clang libFuzzer, short runs in `make test`
FUZZSRC  := $(wildcard src/*/*_fuzz.c)
FUZZBINS := $(patsubst src/%_fuzz.c,build/fuzz/%_fuzz,$(FUZZSRC))
FUZZLIBSRC := $(foreach m,lib model controller store,$(call srcs,$(m)))
build/fuzz/%_fuzz: src/%_fuzz.c $(FUZZLIBSRC)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZ-LD $@")
	$(Q)$(CLANG) -std=gnu11 -g -O1 -D_GNU_SOURCE -Isrc $(shell pkg-config --cflags $(PKGS)) \
	  -fsanitize=fuzzer,address,undefined -o $@ $< $(FUZZLIBSRC) $(LDLIBS)

fuzz: deps $(FUZZBINS)

unit-bins: deps
	$(Q)$(MAKE) --no-print-directory SAN=1 $(patsubst src/%_test.c,build/san/tests/%_test,$(TESTSRC)) \
	  build/san/bin/weft-controller build/san/bin/weftctl

test: deps
	$(Q)$(MAKE) --no-print-directory SAN=1 $(patsubst src/%_test.c,build/san/tests/%_test,$(TESTSRC)) \
	  build/san/bin/weft-controller build/san/bin/weftctl
	$(Q)$(MAKE) --no-print-directory $(FUZZBINS)
	$(Q)bash tests/run

bench: all $(BENCHBINS)
	$(Q)bash bench/run

demo: all
	$(Q)bash scripts/demo.sh

clean:
	rm -rf build bin

-include $(shell find build -name '*.d' 2>/dev/null)
