"""Run execution: the run store, the scheduler, metrics tables; the only layer that knows every other."""
