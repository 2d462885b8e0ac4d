"""``DEMO_SCENARIO=race make demo`` for real: two karts race a short race to its end.

The native runner starts the race's plan (the simulator, the management and the organisers'
view in the management domain, each kart's bridge, interface and reference stack in its own
domain), plays the competition's state manager (``DEMO_START_MODE=sync``: waits for Ready,
sends the start once) and each kart's orchestrator (waits for its ``/awsim/state`` Ready,
asks for AUTONOMOUS), and ends with the management's Finish: the session's time limit is
``TIME_LIMIT_SEC`` of game time (``DEMO_RACE_TIME_LIMIT``), so that it costs well under a
minute on this machine. Meanwhile the test watches the organisers' view in the management
domain: the course, and every kart on it from its ground truth (first on its grid slot, then
down the track). The referee judges the race: its ranking and result files are printed.
"""

import json
import math
import os
from pathlib import Path
import subprocess
import sys

from pylon_common import topics
from pylon_protocol import management
from pylon_testing.recorder import TopicRecorder
from pylon_track import load_track
import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]
TIME_LIMIT_SEC = 15.0
KARTS = 2


@pytest.mark.timeout(150)
def test_a_two_kart_race_runs_to_its_end(free_udp_port, free_udp_port_series,
                                         ros_domain_block, ros_node_in, tmp_path):
    from visualization_msgs.msg import MarkerArray
    base = ros_domain_block(KARTS + 1)
    ports = [free_udp_port_series(KARTS, management.PORT_STRIDE) for _ in range(2)]
    ports += [0, free_udp_port()]
    logs = tmp_path / 'logs'
    env = dict(os.environ, DEMO_SCENARIO='race', DEMO_VEHICLES=str(KARTS),
               DEMO_RACE_TIME_LIMIT=f'{TIME_LIMIT_SEC:g}', DEMO_START_MODE='sync',
               DEMO_SECONDS='110', DEMO_LOG_DIR=str(logs), DEMO_DOMAIN_BASE=str(base),
               DEMO_VIEWER_PORT=str(free_udp_port()))
    out_path = tmp_path / 'demo.out'
    with out_path.open('w') as out:
        demo = subprocess.Popen([sys.executable, str(ROOT / 'launch' / 'native_demo.py'),
                                 '--ports', ','.join(map(str, ports))], env=env, stdout=out,
                                stderr=subprocess.STDOUT)
    try:
        view = TopicRecorder(ros_node_in(base))
        for key in ('race/course_markers', 'race/kart_markers'):
            view.add(key, topics.name(key), MarkerArray, topics.qos(key, reader=True))
        view.until(lambda: demo.poll() is not None, 'the race demo to end', timeout=120)
    finally:
        if demo.poll() is None:
            demo.kill()
    text = out_path.read_text()
    assert demo.returncode == 0, text[-4000:]
    assert f'a race of {KARTS} kart(s), start mode sync; management domain {base}, karts ' \
           f'in {base + 1}, {base + 2}' in text
    line = next(line for line in text.splitlines() if line.startswith('demo result'))
    assert '(race ended, Finish)' in line, line          # the session's time ran out
    result = json.loads(line.split('): ', 1)[1])
    assert [k['mode'] for k in result['karts']] == ['AUTONOMOUS'] * KARTS, result['karts']
    assert all(k['ready_s'] <= k['autonomous_s'] for k in result['karts']), result['karts']
    # the management and the judge end with the race
    assert sorted(result['processes_exited']) == ['referee', 'sim_manager'], result
    standings = result['standings']
    assert sorted(row['vehicle'] for row in standings) == [1, 2]
    assert all(row['statuses_seen'] > 50 for row in standings), standings
    assert sorted(row['rank'] for row in standings) == [1, 2]          # the judge's places
    # the judge's summary (its files in the log directory), as the ranking topic had it
    judge = result['judge']
    assert judge is not None and judge['end'] == 'Finish', judge
    assert judge['time_limit_sec'] == TIME_LIMIT_SEC
    assert [row['vehicle'] for row in judge['ranking']] == \
        [row['vehicle'] for row in standings]
    assert judge == json.loads((logs / 'result-summary.json').read_text(encoding='utf-8'))
    for k in (1, 2):
        assert (logs / f'd{k}-result-details.json').is_file(), k
    assert result['ranking_topic']['end'] == 'Finish'
    tail = text.split(line, 1)[1]
    for k in (1, 2):
        assert f'kart {k}: ' in tail                    # the summary lists both karts
    assert "the judge's files: " in tail
    # the organisers' view: the course, and every kart from its ground truth
    course = view.last('race/course_markers')
    assert course is not None and len(course.markers) == 4
    assert all(m.header.frame_id == 'map' for m in course.markers)
    track = load_track('kart')
    seen = {k: [] for k in (1, 2)}
    for msg in view.messages('race/kart_markers'):
        for marker in msg.markers:
            if marker.ns == 'karts':
                seen[marker.id].append((marker.pose.position.x, marker.pose.position.y))
    for k, path in seen.items():
        assert path, f'kart {k} never drawn'
        grid_x, grid_y, _ = track.grid_pose(k - 1)
        assert math.dist(path[0], (grid_x, grid_y)) < 0.3, (k, path[0])  # on its slot
        # down the track: the line crossed and some 15 s of driving on the course
        progress = track.project(path[-1]).s
        assert 30.0 < progress < track.length - 10.0, (k, path[-1], progress)
        assert all(abs(track.project(p).lateral) < track.width for p in path), k
    for name in ('pylon_sim', 'sim_manager', 'race_view', 'pylon_viewer', 'udp_bridge_1',
                 'kart_interface_2', 'kart_localizer_1', 'pure_pursuit_2'):
        assert (logs / f'{name}.log').exists(), name
