"""PROGRESS-BENCH construction stages (ProgressLM, Sec. 2.1 and App. A-B)."""
