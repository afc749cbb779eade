"""The tests of the web-agent planning tests (tasks/webplan/): sources, forms, build, browser checks, evaluation;
what the main job shows of it (main_job.py)."""
