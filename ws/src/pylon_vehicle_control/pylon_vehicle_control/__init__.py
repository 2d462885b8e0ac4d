"""setpoint_controller and the demo attitude estimator for PyLoN vessels."""
