"""Static checks of what cannot run here: layout, package manifests, the Dockerfile's sources.

The compose file and the Dockerfile are also checked by their own tools
(``test_docker_tools.py``), and what they run by ``tests/test_bringup_static.py``.
"""

from pathlib import Path
import re
import stat

from catkin_pkg.package import parse_package
import pytest

ROOT = Path(__file__).resolve().parents[2]
WS_PACKAGES = sorted(p.parent for p in (ROOT / 'ws' / 'src').glob('*/package.xml'))
OVERLAY_PACKAGES = sorted(p.parent for p in (ROOT / 'ci' / 'overlay').glob('*/package.xml'))
EXPECTED_WS = {'pylon_interfaces', 'pylon_protocol', 'pylon_common', 'pylon_bridge',
               'pylon_vehicle_control', 'pylon_sim', 'pylon_description', 'pylon_mission',
               'pylon_tools', 'pylon_track', 'autoware_auto_control_msgs',
               'autoware_auto_vehicle_msgs', 'autoware_auto_planning_msgs', 'tier4_vehicle_msgs',
               'pylon_kart'}


def test_top_level_layout():
    for name in ('docker', 'ws/src', 'launch', 'rviz', 'config', 'config/overlays', 'ci',
                 'bench', '.ci'):
        assert (ROOT / name).is_dir(), name
    for name in ('compose.yaml', 'README.md', 'Makefile', '.ci/run', 'docker/Dockerfile',
                 'ci/setup.sh', 'ci/env.sh', 'ci/requirements.txt', 'ci/constraints.txt'):
        assert (ROOT / name).is_file(), name
    assert {p.name for p in WS_PACKAGES} == EXPECTED_WS


@pytest.mark.parametrize('path', WS_PACKAGES + OVERLAY_PACKAGES, ids=lambda p: p.name)
def test_package_manifest(path):
    package = parse_package(str(path / 'package.xml'))
    package.validate()
    assert package.name == path.name
    build_type = package.get_build_type()
    if build_type == 'ament_python':
        cfg = (path / 'setup.cfg').read_text()
        assert f'script_dir=$base/lib/{package.name}' in cfg
        assert f'install_scripts=$base/lib/{package.name}' in cfg
        assert (path / 'resource' / package.name).is_file()
        assert (path / package.name / '__init__.py').is_file()
        assert f"PACKAGE = '{package.name}'" in (path / 'setup.py').read_text()
    else:
        assert build_type == 'ament_cmake'
        assert f'project({package.name})' in (path / 'CMakeLists.txt').read_text()


def test_interface_package_lists_every_message_file():
    pkg = ROOT / 'ws' / 'src' / 'pylon_interfaces'
    listed = set(re.findall(r'"(msg/\w+\.msg)"', (pkg / 'CMakeLists.txt').read_text()))
    on_disk = {f'msg/{p.name}' for p in (pkg / 'msg').glob('*.msg')}
    assert listed == on_disk


def dockerfile_instructions() -> list[tuple[str, str]]:
    text = (ROOT / 'docker' / 'Dockerfile').read_text().replace('\\\n', ' ')
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1])
            for line in text.splitlines() if line.strip() and not line.startswith('#')]


def test_dockerfile_copies_real_files_and_never_the_native_overlay():
    instructions = dockerfile_instructions()
    first = next(args for op, args in instructions if op == 'FROM')
    assert first.startswith('ros:${ROS_DISTRO}'), 'the official ROS image is the base'
    # COPY options (--chown=...) are not sources; COPY --from=<stage> copies between stages
    copies = [[w for w in args.split() if not w.startswith('--')]
              for op, args in instructions
              if op == 'COPY' and not args.startswith('--from=')]
    for *sources, _ in copies:
        for source in sources:
            assert (ROOT / source).exists(), source
            assert not source.startswith('ci'), 'native-only packages must stay out of the image'
    copied_manifests = {s for *srcs, _ in copies for s in srcs if s.endswith('package.xml')}
    assert copied_manifests == {f'ws/src/{p.name}/package.xml' for p in WS_PACKAGES}
    assert (ROOT / 'docker' / 'entrypoint.sh').stat().st_mode & stat.S_IXUSR


def test_dockerignore_keeps_native_build_out_of_the_context():
    ignored = (ROOT / '.dockerignore').read_text().split()
    for entry in ('.venv', 'ws/build', 'ws/install', 'ws/log'):
        assert entry in ignored


def test_ci_runs_what_the_readme_tells_users_to_run():
    run = (ROOT / '.ci' / 'run').read_text()
    commands = [line.strip() for line in run.splitlines()
                if line.strip() and not line.lstrip().startswith('#')]
    assert commands[-1] == 'make test'
    readme = (ROOT / 'README.md').read_text()
    for command in ('make test', 'make demo', 'make setup', 'make bench', 'docker compose up',
                    'ci/env.sh'):
        assert command in readme, command
    for package in EXPECTED_WS:
        assert package in readme, package


# Files beside the repository are not shipped; built from parts so this file does not match.
OUTSIDE = re.compile(r'\.\./' + 'shared' + r'\b|/work/' + 'shared')


def test_nothing_reads_outside_the_repository():
    offenders = []
    for path in ROOT.rglob('*'):
        parts = path.relative_to(ROOT).parts
        if not path.is_file() or parts[0] in ('.git', '.venv') or parts[:2] in (
                ('ws', 'build'), ('ws', 'install'), ('ws', 'log')) or '__pycache__' in parts:
            continue
        try:
            text = path.read_text()
        except (UnicodeDecodeError, OSError):
            continue
        if OUTSIDE.search(text):
            offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []
