# Two commands do all the set-up on a fresh clone: `make demo` and `make test`.
PY      ?= python3.11
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: install demo test bench clean

install: $(STAMP)

# torch is pinned first (a CPU wheel is on disk); everything after it installs
# under constraints.txt so that no other requirement can swap it for a CUDA build.
$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check "torch==2.13.0"
	$(BIN)/python -m pip install -q --disable-pip-version-check -c constraints.txt -e ".[all,test]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/privnlu demo --out runs/demo

# two test workers on 2 cores: one OpenMP thread each, or OpenMP spin-waiting slows small ops badly; tests
# marked with one xdist_group run in one worker, in order
test: $(STAMP)
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q -n 2 --dist loadgroup --durations=15

# every benchmark at small sizes (about 20 minutes on 2 cores, half of it the README quickstart), ratios in runs/bench/*.json;
# `make bench BENCH_ARGS=--quick` only checks that each runs (about 12 minutes)
bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) runs .pytest_cache
