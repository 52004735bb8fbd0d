"""harness - one run frame (frame: run folder, command log, signals, teardown, OOM note), the
lab brought up (bringup), one step loop (steps: load on/off, steal sampling, monitor,
progress line, phases file), and the plans given to them: demo (three steps) and ladder (a
profile's steps plus floods: ladder_file, floods).
"""
