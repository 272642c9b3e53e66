VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
BENCH_STAMP := $(VENV)/.installed-bench

.PHONY: demo test install chromium bench clean

# the first install takes a few minutes of downloads: say so, and let pip show what it is fetching
$(STAMP): pyproject.toml
	@test -x $(PY) || { echo "make: creating the virtual environment $(VENV)"; python3 -m venv $(VENV); }
	@echo "make: installing the arena and its dev extras into $(VENV) (a few minutes the first time)"
	$(PY) -m pip install --progress-bar on --upgrade pip
	$(PY) -m pip install --progress-bar on -e '.[dev]'
	@echo "make: installed"
	touch $(STAMP)

install: $(STAMP)

chromium:
	@bash scripts/ensure-chromium.sh $(PY)

demo: install chromium
	$(VENV)/bin/arena demo

test: install chromium
	$(PY) -m pytest -q

$(BENCH_STAMP): pyproject.toml $(STAMP)
	@echo "make: installing the bench extras into $(VENV)"
	$(PY) -m pip install --progress-bar on -e '.[dev,bench]'
	touch $(BENCH_STAMP)

# the peers' table in docs/benchmarks.md (between the peers markers) is rewritten from this run
bench: $(BENCH_STAMP) chromium
	$(PY) bench/overhead.py
	$(PY) bench/overhead.py --crop-heavy --protocol arena
	$(PY) bench/png_levels.py
	$(PY) bench/peers.py --readme docs/benchmarks.md
	$(PY) bench/peers.py --harness arena inspect floor --tasks 64 --images 1 --size 1316x728 --noise 1 --repeats 3 --floor-readme docs/benchmarks.md
	$(PY) bench/wall_timeline.py
	$(PY) bench/instructions.py --readme docs/benchmarks.md

clean:
	rm -rf $(VENV) logs .pytest_cache
