# deltaad developer targets.  `make test` is what CI runs (see .ci/run).
#
#   make test         venv + in-place core build + whole suite (examples included) on both
#                     backends + the docs site + wheel check
#   make build        rebuild src/deltaad/_core*.so after editing cext/*.pyx / *.pxd
#   make docs         the documentation site into site/ (mkdocs, warnings are errors)
#   make fuzz N=5000  the differential fuzzer (tests/fuzz.py): N random programs on both
#                     backends; each mismatch is saved as fuzz-cases/case_<seed>.py
#   make test-asan    the core built with AddressSanitizer + UBSan (build/asan/), the suite
#                     and a fuzz sample run on it (compiled backend only)
#   make bench        benchmark harness, quick size, with plots (make bench-full: full size)
#   make bench-deps   install the libraries the bench compares with (autograd, torch 2.13.0
#                     CPU, JAX, CasADi); each is optional, a missing one is named in the report
#   make clean        remove build products            (make distclean: also .venv)
#
# Every build here sets DELTAAD_REQUIRE_CORE=1, so a core that fails to compile
# stops make instead of silently falling back to the pure-Python backend.
# DELTAAD_TRACE=1 builds a line-traced core for profiling: run `make clean`
# before switching it on or off (an unchanged .pyx is not recompiled).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := test
.DELETE_ON_ERROR:

PYTHON     ?= python3
VENV       := .venv
PY         = $(VENV)/bin/python
STAMP      := $(VENV)/.stamp
WHEEL_VENV := .venv-wheel
ROOT       := $(CURDIR)
# Keep in sync with [build-system].requires in pyproject.toml: the dev venv builds
# without isolation so that `setup.py build_ext --inplace` uses the same tools.
BUILD_REQS := 'setuptools>=64' wheel 'Cython>=3.0' 'numpy>=1.25'
CORE_SRCS  := $(wildcard cext/*.pyx cext/*.pxd cext/*.h)

.PHONY: all venv build test fuzz test-asan docs wheel-check bench bench-full bench-docs bench-deps clean distclean

all: test

venv: $(STAMP)

$(STAMP): pyproject.toml setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	$(PY) -m pip install --upgrade $(BUILD_REQS)
	DELTAAD_REQUIRE_CORE=1 $(PY) -m pip install --no-build-isolation -e '.[test,docs,bench,dist]'
	touch $@

build: venv $(CORE_SRCS)
	DELTAAD_REQUIRE_CORE=1 $(PY) setup.py build_ext --inplace

test: build
	DELTAAD_BACKEND=c $(PY) -m pytest -q
	DELTAAD_BACKEND=python $(PY) -m pytest -q
	$(MAKE) --no-print-directory docs
	$(MAKE) --no-print-directory wheel-check

N     ?= 2000
START ?= 0
fuzz: build
	$(PY) tests/fuzz.py --n $(N) --start $(START) --out fuzz-cases

# The sanitizer build: the same core with -fsanitize=address,undefined (any UB report is fatal),
# in a copy of the package under build/asan/src (the normal build in src/ is left alone); the
# interpreter loads the sanitizer runtimes first (LD_PRELOAD) and allocates with malloc, so
# that ASan sees every Python object the core touches. Leak detection is off: CPython itself
# keeps memory until exit (deltaad's own leaks are tests/test_memory.py's).
ASAN_DIR   := build/asan
ASAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -O1 -g
ASAN_ENV    = LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libubsan.so)" \
              ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:strict_init_order=1 \
              UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 PYTHONMALLOC=malloc \
              PYTHONPATH=$(ROOT)/$(ASAN_DIR)/src DELTAAD_BACKEND=c
ASAN_FUZZ  ?= 300

test-asan: build
	rm -rf $(ASAN_DIR)
	CFLAGS="$(ASAN_FLAGS)" LDFLAGS="$(ASAN_FLAGS)" DELTAAD_REQUIRE_CORE=1 \
	  $(PY) setup.py -q build_ext --force --build-lib $(ASAN_DIR)/lib --build-temp $(ASAN_DIR)/tmp
	mkdir -p $(ASAN_DIR)/src
	cp -r src/deltaad $(ASAN_DIR)/src/
	rm -f $(ASAN_DIR)/src/deltaad/*.so
	cp $(ASAN_DIR)/lib/deltaad/*.so $(ASAN_DIR)/src/deltaad/
	$(ASAN_ENV) $(PY) -c 'import deltaad, deltaad.compile, sys; \
	  assert deltaad.__file__.startswith("$(ROOT)/$(ASAN_DIR)/"), deltaad.__file__; \
	  assert deltaad.backend == "c"; print("sanitized core:", deltaad._core.__file__); \
	  import deltaad._replay as r; assert r.__file__.startswith("$(ROOT)/$(ASAN_DIR)/"), r.__file__; \
	  print("sanitized replayer:", r.__file__)'
	$(ASAN_ENV) DELTAAD_FUZZ_PROGRAMS=$(ASAN_FUZZ) $(PY) -m pytest -q -p no:cacheprovider

# The site (docs/, mkdocs.yml): the API pages come from the docstrings, the list of supported
# functions from deltaad.support_table() (docs/hooks.py). --strict: a warning is an error.
docs: venv
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

# Build the wheel the way a user's pip would (isolated build from pyproject.toml),
# install it into a brand-new venv and import it from outside the repo.
wheel-check: venv
	rm -f dist/deltaad-*.whl
	DELTAAD_REQUIRE_CORE=1 $(PY) -m pip wheel . --no-deps -w dist/
	$(PY) -c 'import glob, zipfile; \
	  whls = glob.glob("dist/deltaad-*.whl"); assert len(whls) == 1, whls; \
	  so = [n for n in zipfile.ZipFile(whls[0]).namelist() \
	        if n.startswith("deltaad/_core") and n.endswith((".so", ".pyd"))]; \
	  assert so, "no deltaad/_core shared object in " + whls[0]; \
	  ar = [n for n in zipfile.ZipFile(whls[0]).namelist() \
	        if n.startswith("deltaad/_arrays") and n.endswith((".so", ".pyd"))]; \
	  assert ar, "no deltaad/_arrays shared object in " + whls[0]; \
	  print("wheel", whls[0], "contains", so[0], ar[0])'
	rm -rf $(WHEEL_VENV)
	$(PYTHON) -m venv $(WHEEL_VENV)
	$(WHEEL_VENV)/bin/python -m pip install dist/deltaad-*.whl
	tmp=$$(mktemp -d) && cd "$$tmp" && \
	  "$(ROOT)/$(WHEEL_VENV)/bin/python" -c "import deltaad; \
	    assert '/$(WHEEL_VENV)/' in deltaad.__file__, deltaad.__file__; \
	    assert deltaad.backend == 'c', deltaad.backend; \
	    from deltaad.numpy import fast; assert fast.enabled(), fast.why; \
	    print('wheel ok:', deltaad.backend)" && \
	  cd "$(ROOT)" && rm -rf "$$tmp"

bench: build
	$(PY) -m bench --quick

bench-full: build
	$(PY) -m bench --full

# Refresh the benchmark snapshot the documentation's Performance page shows (headline table,
# report, plots in docs/bench/); commit it with the machine it ran on named in the report.
bench-docs: build
	$(PY) -m bench --quick --out docs/bench

bench-deps: venv
	DELTAAD_REQUIRE_CORE=1 $(PY) -m pip install --no-build-isolation -e '.[peers]'

clean:
	rm -rf build/ dist/ site/ *.egg-info src/*.egg-info $(WHEEL_VENV)
	rm -f src/deltaad/_core*.so src/deltaad/_core*.pyd src/deltaad/_replay*.so src/deltaad/_replay*.pyd src/deltaad/_arrays*.so src/deltaad/_arrays*.pyd src/deltaad/_array_replay*.so src/deltaad/_array_replay*.pyd cext/*.c cext/*.html

distclean: clean
	rm -rf $(VENV)
