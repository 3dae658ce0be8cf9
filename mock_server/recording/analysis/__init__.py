"""What is made of recordings (docs/recording.md "Compare", "Calibrate"): reading them,
each order's life and its outcome class, the replay against a sandbox driven over
HTTP, the report, calibrated scenarios and shapes."""
