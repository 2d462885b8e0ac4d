"""Install pylon_testing as an ament_python package."""

from setuptools import find_packages, setup

PACKAGE = 'pylon_testing'

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
    description='pytest harness: real processes on an isolated ROS domain, waits with timeouts.',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'kart_driver = pylon_testing.kart_driver:main',
            'latched_publisher = pylon_testing.latched_publisher:main',
            'wheel_driver = pylon_testing.wheel_driver:main',
            'wrench_client = pylon_testing.wrench_client:main',
        ],
    },
)
