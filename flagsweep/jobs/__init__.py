"""The programs that drive sweeps: one sweep, a fleet of them, a campaign, the calibration
and the scaffold that writes a new target."""
