"""The kart's sensor remaps (``pylon_kart.sensing``): the bridge's names to the competition's."""

from pylon_kart import sensing


def test_the_bridge_arguments_remap_every_sensor_and_name_the_imu_frame():
    assert sensing.bridge_arguments() == [
        '--ros-args',
        '-r', '/ksp_vessel/imu/data_raw:=/sensing/imu/imu_raw',
        '-r', '/ksp_vessel/gnss/gnss/fix:=/sensing/gnss/nav_sat_fix',
        '-r', '/ksp_vessel/lidar_2d/lidar/scan:=/sensing/lidar/scan',
        '-r', '/ksp_vessel/camera/camera/image_raw:=/sensing/camera/image_raw',
        '-r', '/ksp_vessel/camera/camera/camera_info:=/sensing/camera/camera_info',
        '-p', 'imu_frame_id:=imu_link']


def test_the_bridge_names_follow_the_topic_prefix():
    names = sensing.remapping('/kart')
    assert names['/kart/lidar_2d/lidar/scan'] == '/sensing/lidar/scan'
    assert len(names) == len(sensing.REMAPS) == len(set(names.values())) == 5
