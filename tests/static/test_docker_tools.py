"""Docker files checked by the tools their users trust, without a Docker engine.

``compose.yaml`` against the official compose-spec JSON schema (``check-jsonschema``, whose
vendored schema needs no network) and ``docker/Dockerfile`` with hadolint, configured by
``.hadolint.yaml`` (the rules ignored there, and why). Both tools come from
``ci/requirements.txt``; a failure shows the tool's own report. One broken file for each
tool shows that its check can fail (the tools' own test suites cover the rest).
"""

from pathlib import Path
import shutil
import subprocess

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / 'compose.yaml'
DOCKERFILE = ROOT / 'docker' / 'Dockerfile'
HADOLINT_CONFIG = ROOT / '.hadolint.yaml'


def run(tool: str, *args: object) -> subprocess.CompletedProcess:
    """Run a tool of the workspace environment and return its result (output captured)."""
    executable = shutil.which(tool)
    if executable is None:
        pytest.fail(f'{tool} is not on PATH: `make setup` installs it (ci/requirements.txt); '
                    'run the tests with ci/env.sh or make test')
    return subprocess.run([executable, *map(str, args)], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)


def report(result: subprocess.CompletedProcess) -> str:
    return f'$ {" ".join(result.args)}\n{result.stdout}{result.stderr}'


def check_compose(path: Path) -> subprocess.CompletedProcess:
    return run('check-jsonschema', '--builtin-schema', 'vendor.compose-spec', path)


def hadolint(path: Path) -> subprocess.CompletedProcess:
    return run('hadolint', '--no-color', '--config', HADOLINT_CONFIG, path)


# -- compose-spec -------------------------------------------------------------------------

def test_compose_file_matches_the_compose_spec():
    result = check_compose(COMPOSE)
    assert result.returncode == 0, report(result)


def test_a_misspelled_service_key_is_refused(tmp_path):
    """One mistake shows the check can fail: a typo in a key of a service.

    Our own static checks read the keys they know and would not notice an unknown one;
    compose refuses the file. Our file (anchors and merge keys resolved) is valid as
    written out, then refused with ``environment`` misspelled in the bridge service.
    """
    compose = yaml.safe_load(COMPOSE.read_text())
    valid = tmp_path / 'valid.yaml'
    valid.write_text(yaml.safe_dump(compose))
    result = check_compose(valid)
    assert result.returncode == 0, report(result)
    bridge = compose['services']['bridge']
    bridge['enviroment'] = bridge.pop('environment')
    broken = tmp_path / 'compose.yaml'
    broken.write_text(yaml.safe_dump(compose))
    result = check_compose(broken)
    assert result.returncode == 1, report(result)
    assert 'Schema validation errors' in result.stdout, report(result)
    assert "'enviroment' was unexpected" in result.stdout, report(result)


# -- hadolint -----------------------------------------------------------------------------

def test_dockerfile_passes_hadolint():
    result = hadolint(DOCKERFILE)
    assert result.returncode == 0, report(result)


def test_hadolint_refuses_a_bad_dockerfile_and_ignores_only_what_the_config_says(tmp_path):
    bad = tmp_path / 'Dockerfile'
    bad.write_text('FROM ubuntu:latest\nRUN apt-get update && apt-get install -y curl\n')
    result = hadolint(bad)
    assert result.returncode == 1, report(result)
    for rule in ('DL3007', 'DL3009', 'DL3015'):   # latest tag, apt lists kept, recommends
        assert rule in result.stdout, report(result)
    assert 'DL3008' not in result.stdout, report(result)   # ignored by .hadolint.yaml


def test_every_ignored_rule_is_explained_and_listed_in_the_readme():
    config = yaml.safe_load(HADOLINT_CONFIG.read_text())
    text = HADOLINT_CONFIG.read_text()
    readme = (ROOT / 'README.md').read_text()
    assert config['ignored'], 'an empty ignore list: remove it'
    for rule in config['ignored']:
        comment = [line for line in text.splitlines() if line.lstrip().startswith(f'# {rule}')]
        assert comment, f'{rule}: no comment in .hadolint.yaml says why it is ignored'
        assert f'`{rule}`' in readme, f'{rule}: not listed in README.md'
