# deltaad developer targets.  `make test` is what CI runs (see .ci/run).
#
#   make test         venv + in-place core build + whole suite (examples included) on both
#                     backends + the docs site + wheel check
#   make build        rebuild src/deltaad/_core*.so after editing cext/*.pyx / *.pxd
#   make docs         the documentation site into site/ (mkdocs, warnings are errors)
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
BUILD_REQS := 'setuptools>=64' wheel 'Cython>=3.0'
CORE_SRCS  := $(wildcard cext/*.pyx cext/*.pxd cext/*.h)

.PHONY: all venv build test docs wheel-check bench bench-full bench-docs bench-deps clean distclean

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
	  print("wheel", whls[0], "contains", so[0])'
	rm -rf $(WHEEL_VENV)
	$(PYTHON) -m venv $(WHEEL_VENV)
	$(WHEEL_VENV)/bin/python -m pip install dist/deltaad-*.whl
	tmp=$$(mktemp -d) && cd "$$tmp" && \
	  "$(ROOT)/$(WHEEL_VENV)/bin/python" -c "import deltaad; \
	    assert '/$(WHEEL_VENV)/' in deltaad.__file__, deltaad.__file__; \
	    assert deltaad.backend == 'c', deltaad.backend; \
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
	rm -f src/deltaad/_core*.so src/deltaad/_core*.pyd cext/*.c cext/*.html

distclean: clean
	rm -rf $(VENV)
