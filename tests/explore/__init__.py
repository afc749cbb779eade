"""The tests of EXPLORE-Bench (tasks/explore/): sources, rules, construction, the official files; what the main job
shows of it (main_job.py)."""
