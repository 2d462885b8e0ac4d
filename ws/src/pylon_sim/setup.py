"""Install pylon_sim as an ament_python package."""

from setuptools import find_packages, setup

PACKAGE = 'pylon_sim'

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
    description='A stand-in for KSP with the PyLoN mod (no rclpy).',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'pylon_sim = pylon_sim.loop.main:main',
            'pylon_sim_admin = pylon_sim.loop.admin:main',
        ],
    },
)
