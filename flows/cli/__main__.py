"""``python -m flows.cli``: as the ``benchwright`` command (``flows.entry``), the warm process first."""

from flows.cli import app
from flows.last_resort import reported
from flows.warm import warm_or_here

if __name__ == "__main__":  # not when a worker process runs this module again to set itself up
    warm_or_here(lambda: reported(app))
