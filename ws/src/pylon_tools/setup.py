"""Install pylon_tools as an ament_python package."""

from setuptools import find_packages, setup

PACKAGE = 'pylon_tools'

setup(
    name=PACKAGE,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + PACKAGE]),
        ('share/' + PACKAGE, ['package.xml']),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='PyLoN workspace maintainers',
    maintainer_email='maintainers@pylon-workspace.org',
    description='Seeing and keeping data: a Foxglove live view, MCAP recordings, plots.',
    license='Apache-2.0',
    entry_points={'console_scripts': [
        'pylon_viewer = pylon_tools.viewer_node:main',
        'pylon_recorder = pylon_tools.recorder_node:main',
        'pylon_plot = pylon_tools.plot_cli:main',
    ]},
)
