"""The shared entry point, in real processes: stop on request or signal, clean exit."""

import signal
import sys

import pytest

pytestmark = pytest.mark.integration

CHILD = """
import sys
import rclpy
from rclpy.node import Node
from pylon_common import node_main

mode, out = sys.argv[1], sys.argv[2]


class Ticker(Node):
    def __init__(self):
        super().__init__('ticker')
        if mode == 'bad':
            raise ValueError('option gain (--gain): must be 0.01-10, got 20.0')
        self.ticks = 0
        self.timer = self.create_timer(0.01, self.tick)

    def tick(self):
        self.ticks += 1
        if self.ticks == 1:
            print('spinning', flush=True)
        if mode == 'stop' and self.ticks == 5:
            node_main.request_stop()


def on_exit(node):
    with open(out, 'w') as f:
        f.write(f'{node.ticks} {rclpy.ok()}')


sys.exit(node_main.run(Ticker, on_exit, ['ticker']))
"""


def start(ros_process, mode, tmp_path):
    out = tmp_path / 'exit.txt'
    return ros_process([sys.executable, '-c', CHILD, mode, str(out)], name=mode), out


def test_a_node_that_asks_to_stop_ends_cleanly(ros_process, tmp_path):
    process, out = start(ros_process, 'stop', tmp_path)
    assert process.wait(timeout=60.0) == 0, process.log()
    ticks, context_alive = out.read_text().split()
    assert int(ticks) >= 5 and context_alive == 'True'       # on_exit ran with ROS alive


@pytest.mark.parametrize('sig', [signal.SIGINT, signal.SIGTERM])
def test_a_signal_ends_the_spin_without_an_exception(ros_process, tmp_path, sig):
    process, out = start(ros_process, 'spin', tmp_path)
    process.wait_for_output('spinning', timeout=60.0)
    process.popen.send_signal(sig)
    assert process.wait(timeout=60.0) == 0, process.log()
    assert 'Traceback' not in process.log() and 'KeyboardInterrupt' not in process.log()
    assert out.read_text().endswith('True')


def test_a_bad_parameter_exits_2_with_one_line(ros_process, tmp_path):
    process, out = start(ros_process, 'bad', tmp_path)
    assert process.wait(timeout=60.0) == 2
    assert process.log().strip() == 'ticker: option gain (--gain): must be 0.01-10, got 20.0'
    assert not out.exists()
