"""The tests of PROGRESS-BENCH (tasks/progress/): construction, import of the published files, metrics, negatives,
chain of thought; what the main job shows of it (main_job.py)."""
