"""TPU counter tools tbprof lists only where the profile carries their data."""
