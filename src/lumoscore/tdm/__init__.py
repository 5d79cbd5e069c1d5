"""Time-division multiplexed multi-stage scheduling of PS / RAR / all-to-all jobs in an ODCN."""
