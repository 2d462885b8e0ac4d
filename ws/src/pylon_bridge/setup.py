"""Install pylon_bridge as an ament_python package."""

from setuptools import find_packages, setup

PACKAGE = 'pylon_bridge'

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
    description='udp_bridge: PyLoN UDP datagrams to ROS 2 and back.',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'udp_bridge = pylon_bridge.cli:main',
            'description_relay = pylon_bridge.relays:description_relay_main',
            'nearby_markers = pylon_bridge.relays:nearby_markers_main',
        ],
    },
)
