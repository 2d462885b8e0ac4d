"""The native environment: ci/env.sh from anywhere, and make setup refusing what it cannot use."""

import os
from pathlib import Path
import shutil
import subprocess
import sys

ROOT = Path(__file__).resolve().parents[1]
SETUP = ROOT / 'ci' / 'setup.sh'
ENV_SH = ROOT / 'ci' / 'env.sh'


def run(cmd, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, **kwargs)


def test_env_sh_works_from_any_directory(tmp_path):
    result = run([str(ENV_SH), 'python', '-c',
                  'import rclpy, pylon_interfaces.msg, tf2_msgs.msg, numpy, scipy, xacro; '
                  'import sys; print(sys.version_info[:2])'], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == '(3, 11)'


def test_env_sh_puts_workspace_executables_on_path(tmp_path):
    result = run([str(ENV_SH), 'sh', '-c', 'command -v latched_publisher'], cwd='/')
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith('/ws/install/pylon_testing/lib/pylon_testing/'
                                          'latched_publisher')


def test_env_sh_without_a_command_prints_usage():
    result = run([str(ENV_SH)])
    assert result.returncode == 2
    assert 'usage: ci/env.sh CMD' in result.stderr


def path_without(tmp_path: Path, *hidden: str) -> str:
    """Return a PATH with the same programs as now, less ``hidden``."""
    shadow = tmp_path / 'bin'
    shadow.mkdir()
    for directory in os.environ['PATH'].split(os.pathsep):
        if not os.path.isdir(directory):
            continue
        for name in os.listdir(directory):
            target = shadow / name
            if name in hidden or target.exists() or target.is_symlink():
                continue
            target.symlink_to(os.path.join(directory, name))
    return str(shadow)


def test_setup_refuses_an_unsupported_python(tmp_path):
    other = next((p for p in ('python3.12', 'python3.10', 'python3.13') if shutil.which(p)),
                 None)
    if other is None:  # a machine with no other Python still gets the "not found" path
        other = str(tmp_path / 'python-nowhere')
    result = run(['bash', str(SETUP)], env={**os.environ, 'PYTHON': other,
                                            'PYLON_VENV': str(tmp_path / 'venv')})
    assert result.returncode == 1
    assert 'setup: error:' in result.stderr
    assert 'Python 3.11 is required' in result.stderr or 'not 3.11' in result.stderr
    assert 'PYTHON=/path/to/python3.11' in result.stderr
    assert not (tmp_path / 'venv').exists()


def test_setup_refuses_a_machine_without_cmake(tmp_path):
    env = {**os.environ, 'PATH': path_without(tmp_path, 'cmake'),
           'PYTHON': sys.executable if sys.version_info[:2] == (3, 11) else 'python3.11',
           'PYLON_VENV': str(tmp_path / 'venv')}
    result = run(['bash', str(SETUP)], env=env)
    assert result.returncode == 1
    assert 'build tools are missing' in result.stderr
    assert 'cmake (apt-get install cmake)' in result.stderr
    assert not (tmp_path / 'venv').exists()


def test_setup_names_a_missing_cxx_compiler(tmp_path):
    env = {**os.environ, 'PATH': path_without(tmp_path, 'g++', 'c++'),
           'PYLON_VENV': str(tmp_path / 'venv')}
    result = run(['bash', str(SETUP)], env=env)
    assert result.returncode == 1
    assert 'a C++ compiler (apt-get install g++)' in result.stderr
