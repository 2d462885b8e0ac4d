"""Install pylon_description as an ament_python package."""

from glob import glob

from setuptools import find_packages, setup

PACKAGE = 'pylon_description'

setup(
    name=PACKAGE,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + PACKAGE]),
        ('share/' + PACKAGE, ['package.xml']),
        ('share/' + PACKAGE + '/urdf', sorted(glob('urdf/*.xacro'))),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='PyLoN workspace maintainers',
    maintainer_email='maintainers@pylon-workspace.org',
    description='xacro macros of the PyLoN proxy vessel model.',
    license='Apache-2.0',
    entry_points={'console_scripts': []},
)
