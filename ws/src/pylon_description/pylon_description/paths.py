"""Locate the data files of pylon_description."""

from pathlib import Path

from ament_index_python.packages import (
    get_package_share_directory,
    PackageNotFoundError,
)

PACKAGE = 'pylon_description'
XACRO_NAME = 'proxy_parts.urdf.xacro'


def _source_urdf_dir() -> Path:
    return Path(__file__).resolve().parent.parent / 'urdf'


def urdf_dir() -> Path:
    """Return the directory holding the package's URDF/xacro files.

    The installed ``share/pylon_description/urdf`` is preferred; without an installed
    package (a source checkout on ``PYTHONPATH``) the ``urdf`` folder beside the Python
    package is used.
    """
    try:
        installed = Path(get_package_share_directory(PACKAGE)) / 'urdf'
    except (PackageNotFoundError, ValueError):
        installed = None
    if installed is not None and (installed / XACRO_NAME).is_file():
        return installed
    return _source_urdf_dir()


def xacro_file() -> Path:
    """Return the path of ``proxy_parts.urdf.xacro``; raise FileNotFoundError if absent."""
    path = urdf_dir() / XACRO_NAME
    if not path.is_file():
        raise FileNotFoundError(
            f'{XACRO_NAME} is neither installed in share/{PACKAGE}/urdf nor next to the '
            f'{PACKAGE} Python package ({path.parent})')
    return path
