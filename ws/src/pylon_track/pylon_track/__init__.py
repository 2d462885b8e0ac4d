"""Race tracks: one track file read by the simulator, the vehicle interface and the judge.

``pylon_track.race`` holds the race on a track (laps through sections, times, boosts,
track limits), pure, for the simulator and a judge alike.
"""

from pylon_track.track import load_track, Projection, Track, track_names, TrackError

__all__ = ['load_track', 'Projection', 'Track', 'TrackError', 'track_names']
