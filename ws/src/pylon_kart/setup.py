"""Install pylon_kart as an ament_python package."""

from setuptools import find_packages, setup

PACKAGE = 'pylon_kart'

setup(
    name=PACKAGE,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    package_data={PACKAGE: ['data/*.csv']},
    include_package_data=True,
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + PACKAGE]),
        ('share/' + PACKAGE, ['package.xml']),
    ],
    install_requires=['setuptools'],
    zip_safe=False,
    maintainer='PyLoN workspace maintainers',
    maintainer_email='maintainers@pylon-workspace.org',
    description="A KSP rover as a racing kart: the competition's vehicle interface and a "
                'reference stack (localizer, trajectory, pure pursuit).',
    license='Apache-2.0',
    entry_points={'console_scripts': [
        'kart_interface = pylon_kart.interface_node:main',
        'kart_localizer = pylon_kart.localizer_node:main',
        'trajectory_publisher = pylon_kart.trajectory_node:main',
        'pure_pursuit = pylon_kart.pure_pursuit_node:main',
        'kart_trajectory = pylon_kart.trajectory:main',
        'race_view = pylon_kart.race_view_node:main',
    ]},
)
