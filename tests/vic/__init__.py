"""The tests of ViC-Bench (tasks/vic/): its four tasks, the picture pool, the benchmark end to end; what the main job
shows of it (main_job.py)."""
