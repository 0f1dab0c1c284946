# make demo: the main job.  make test: the whole suite, as CI runs it.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lab bench schema clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/kafkalab demo

test: $(STAMP)
	$(VENV)/bin/lint-imports
	$(PY) -m pytest -n 2 -q

# JupyterLab on the teaching notebooks (Ctrl-C stops it).
lab: $(STAMP)
	$(VENV)/bin/jupyter lab --ServerApp.root_dir=notebooks

bench: $(STAMP)
	$(PY) bench/bench_codec.py
	$(PY) bench/bench_records.py
	$(PY) bench/bench_capture.py
	$(PY) bench/bench_broker.py

# Regenerate the committed schema files from Apache Kafka's message definitions (needs ../shared).
schema: $(STAMP)
	$(PY) scripts/generate_schema.py --specs ../shared/kafka-message-specs

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
