VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test install chromium bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

chromium:
	@bash scripts/ensure-chromium.sh $(PY)

demo: install chromium
	$(VENV)/bin/arena demo

test: install chromium
	$(PY) -m pytest -q

bench: install chromium
	$(PY) bench/overhead.py

clean:
	rm -rf $(VENV) logs .pytest_cache
