"""Race tracks: one track file read by the simulator, the vehicle interface and the judge."""

from pylon_track.track import load_track, Projection, Track, track_names, TrackError

__all__ = ['load_track', 'Projection', 'Track', 'TrackError', 'track_names']
