"""Install pylon_vehicle_control as an ament_python package."""

from setuptools import find_packages, setup

PACKAGE = 'pylon_vehicle_control'

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
    description='setpoint_controller and a demo attitude estimator.',
    license='Apache-2.0',
    entry_points={'console_scripts': [
        'attitude_estimator = pylon_vehicle_control.estimator_node:main',
        'setpoint_controller = pylon_vehicle_control.controller_node:main',
        'attitude_evaluator = pylon_vehicle_control.evaluator_node:main',
        'rendezvous_chaser = pylon_vehicle_control.chaser_node:main',
    ]},
)
