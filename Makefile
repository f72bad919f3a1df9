# groupcoord: every target documents itself with `## ...`; `make` alone prints them.
.DEFAULT_GOAL := help
SHELL := /bin/bash

VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export PYSPARK_PYTHON := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))

.PHONY: help install run run-members ingest checkpoint cluster test test-faults test-cluster test-fast lint bench bench-full conf clean

help: ## list the targets
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-12s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml jvm/spark/pom.xml jvm/kafka/pom.xml jvm/install_jars.py
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,plot]'
	$(PY) jvm/install_jars.py
	@touch $(STAMP)

# kafkajs for tests/clients (node): npm ci from the committed lock file, again only when package.json or the lock change.
NODE_DIR := tests/clients/node
NODE_STAMP := $(NODE_DIR)/node_modules/.installed
$(NODE_STAMP): $(NODE_DIR)/package.json $(NODE_DIR)/package-lock.json
	cd $(NODE_DIR) && npm ci --no-audit --no-fund --loglevel=error
	@touch $(NODE_STAMP)

# versitygw, the S3 server of tests/s3 (posix backend, conditional puts checked under its publish lock), built with the
# machine's Go into the venv's bin once per version (a few minutes on two cores).
VERSITYGW_VERSION := v1.8.0
VERSITYGW_STAMP := $(VENV)/.versitygw-$(VERSITYGW_VERSION)
$(VERSITYGW_STAMP): | $(STAMP)
	GOBIN=$(abspath $(VENV))/bin go install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)
	@touch $(VERSITYGW_STAMP)

install: $(STAMP) $(NODE_STAMP) $(VERSITYGW_STAMP) ## create .venv, install groupcoord with its dev extras, fetch the JVM jars with Maven, kafkajs with npm and build versitygw with Go (once)

run: install ## the pipeline under ./var: 12x100k-record topic -> 2 Structured Streaming queries into groupcoord-delta (one stops, its partitions move), AvailableNow -> describe, lag, exactly-once check
	@start=$$(date +%s); $(PY) -m groupcoord.ingest.demo_pipeline --engine structured $(if $(ASSIGNORS),--assignors $(ASSIGNORS)); rc=$$?; \
	  echo "make run: $$(( $$(date +%s) - start ))s after install"; exit $$rc

run-members: install ## the same pipeline with executor tasks as members (run_members: 3 members, one leaves)
	@start=$$(date +%s); $(PY) -m groupcoord.ingest.demo_pipeline --engine members $(if $(ASSIGNORS),--assignors $(ASSIGNORS)); rc=$$?; \
	  echo "make run-members: $$(( $$(date +%s) - start ))s after install"; exit $$rc

# The jobs under bin/spark-submit (this venv's Spark, Delta's and the Kafka source's jars, Spark's logs at WARN):
# ARGS are the job's flags (jobs/README.md), SPARK_ARGS spark-submit's own (--master, --conf spark.*).
ingest: install ## jobs/streaming_ingest.py: make ingest ARGS="--group G --topics T --sink DIR --members N" [SPARK_ARGS="--master local[4,4]"]
	GROUPCOORD_VENV=$(abspath $(VENV)) bin/spark-submit $(SPARK_ARGS) jobs/streaming_ingest.py $(ARGS)

checkpoint: install ## jobs/offset_checkpoint.py: make checkpoint ARGS="--state-root DIR [--plot lag.png]" [SPARK_ARGS=...]
	GROUPCOORD_VENV=$(abspath $(VENV)) bin/spark-submit $(SPARK_ARGS) jobs/offset_checkpoint.py $(ARGS)

# A Spark standalone cluster on this machine (groupcoord cluster start): a master and CLUSTER_WORKERS workers of
# CLUSTER_CORES cores, each its own JVM, on 127.0.0.1; logs under var/cluster. Submit to the master URL it prints.
CLUSTER_WORKERS ?= 2
CLUSTER_CORES ?= 1
cluster: install ## a Spark standalone cluster on 127.0.0.1 (master + 2 workers, own JVMs) until Ctrl-C; prints its spark:// URL
	$(PY) -m groupcoord cluster start --work-dir var/cluster --workers $(CLUSTER_WORKERS) --cores $(CLUSTER_CORES)

# pytest-xdist workers: each module (or package of tests/conftest.py's WHOLE_PACKAGES) runs on one worker, the costly
# ones handed out first. TEST_WORKERS=0 runs the tests in this process, in file order.
TEST_WORKERS ?= 2
PYTEST_WORKERS := $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadscope)

# $(call pytest,MARKS): pytest on the workers for the tests that MARKS selects; "no tests collected" is a failure.
define pytest
@$(PY) -m pytest $(PYTEST_WORKERS) -m "$(1)" --durations=15; rc=$$?; \
  if [ $$rc -eq 5 ]; then echo "make $@: pytest collected no tests" >&2; exit 1; fi; exit $$rc
endef

test: install ## run every test but the fault matrices (see test-faults, test-cluster) on TEST_WORKERS=2 workers
	$(call pytest,not faults and not cluster)

test-faults: install ## the fault matrices (tests marked faults: kills, crash points, broken storage, failover); CI runs them after make test
	$(call pytest,faults and not cluster)

# One module on one worker (its tests share one standalone cluster): the machine's cores belong to the cluster.
test-cluster: install ## the fault matrix on a Spark standalone cluster (tests marked cluster: driver, worker, executor kills); CI runs it after test-faults
	@$(PY) -m pytest -m cluster --durations=15; rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "make $@: pytest collected no tests" >&2; exit 1; fi; exit $$rc

test-fast: install ## run the tests marked neither slow nor faults (on TEST_WORKERS=2 workers)
	$(call pytest,not slow and not faults)

lint: install ## ruff and mypy
	$(VENV)/bin/ruff check groupcoord tests bench jobs jvm
	$(VENV)/bin/mypy

conf: install ## regenerate conf/groupcoord-defaults.conf from the key registry
	$(PY) -m groupcoord.config.generate conf/groupcoord-defaults.conf

bench: install ## run the benchmarks and regenerate docs/benchmarks.md
	$(PY) -m bench.run

bench-full: install ## the long and large benchmark cases
	$(PY) -m bench.run --full

clean: ## remove the venv, caches and ./var
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache build dist
