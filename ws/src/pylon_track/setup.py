"""Install pylon_track as an ament_python package (its track files are package data)."""

from setuptools import find_packages, setup

PACKAGE = 'pylon_track'

setup(
    name=PACKAGE,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    package_data={PACKAGE: ['tracks/*.yaml']},
    include_package_data=True,
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + PACKAGE]),
        ('share/' + PACKAGE, ['package.xml']),
    ],
    install_requires=['setuptools'],
    zip_safe=False,
    maintainer='PyLoN workspace maintainers',
    maintainer_email='maintainers@pylon-workspace.org',
    description='Race tracks in pure Python (no rclpy): centreline, sections, grid, map frame.',
    license='Apache-2.0',
    entry_points={'console_scripts': []},
)
