# The workspace's commands. Native ones use .venv (ROS 2 Jazzy from PyPI) and ws/install;
# see README.md. Every target is safe to run again.
SHELL := /bin/bash
.DEFAULT_GOAL := help
ENV := ci/env.sh

.PHONY: help setup test test-fast fuzz coverage lint demo bench clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/'

setup:  ## create .venv from PyPI's ROS 2 wheels and build ws/src (idempotent)
	@bash ci/setup.sh

lint: setup  ## ruff over every Python file in the repository
	@$(ENV) ruff check .

test: setup  ## the whole suite: lint, static checks, unit and integration tests (what CI runs)
	@bash ci/test.sh

test-fast: setup  ## the edit loop: lint, static, unit and property tests; no process, no ROS node
	@bash ci/test-fast.sh

fuzz: setup  ## property tests with random seeds and 10x examples for FUZZ_SECONDS (default 300)
	@bash ci/fuzz.sh

coverage: setup  ## the whole suite with line coverage of ws/src (every process it starts too)
	@rm -rf .coverage-data && mkdir -p .coverage-data
	@bash ci/test.sh --cov --cov-report=term:skip-covered --cov-report=xml:test-results/coverage.xml

demo: setup  ## run the main job natively
	@bash ci/demo.sh

bench: setup  ## run bench/bench_*.py, each writing JSON to bench/results/
	@$(ENV) python bench/run.py

clean:  ## remove the build (keeps .venv)
	rm -rf ws/build ws/install ws/log .venv/.pylon-build
