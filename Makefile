# make demo: the main job.  make test: the whole suite, as CI runs it.  make lab: the notebooks.
# Each installs into .venv what it needs: the plain install (demo), the notebook and spark extras (lab; notebook 6
# runs Spark, which also needs Java 17+), the test extra.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: demo test lab bench schema clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.installed-core: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-%: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[$*]'
	touch $@

demo: $(VENV)/.installed-core
	$(VENV)/bin/kafkalab demo

test: $(VENV)/.installed-test
	$(VENV)/bin/lint-imports
	$(PY) -m pytest -n 2 -q -m "not soak"
	$(PY) -m pytest -q -m soak

# JupyterLab on the teaching notebooks (Ctrl-C stops it).
lab: $(VENV)/.installed-notebook,spark
	$(VENV)/bin/jupyter lab --ServerApp.root_dir=notebooks

bench: $(VENV)/.installed-test
	$(PY) bench/bench_codec.py
	$(PY) bench/bench_records.py
	$(PY) bench/bench_capture.py
	$(PY) bench/bench_broker.py

# Regenerate the committed schema files from Apache Kafka's message definitions (needs ../shared).
schema: $(VENV)/.installed-test
	$(PY) scripts/generate_schema.py --specs ../shared/kafka-message-specs

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
