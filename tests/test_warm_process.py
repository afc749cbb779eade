"""What the warm process (``flows.warm_process``) does once, so that the commands it forks do not each do it."""

from __future__ import annotations

import subprocess
import sys


def test_pydantic_models_left_to_their_first_use_are_built_before_commands_fork():
    """A model naming a class defined after it has no validator until its first use, which every forked command
    would pay again; the warm-up builds it. One it cannot build (a name never defined) is left to its first
    use and stops nothing."""
    probe = ("from typing import Generic, TypeVar\n"
             "from pydantic import BaseModel\n"
             "from flows.warm_process import _complete_deferred_models\n"
             "class Early(BaseModel):\n"
             "    later: 'Later | None' = None\n"
             "class Later(BaseModel):\n"
             "    name: str = 'x'\n"
             "T = TypeVar('T')\n"
             "class Box(BaseModel, Generic[T]):\n"
             "    item: 'T | Missing'\n"
             "before = Early.__pydantic_complete__\n"
             "_complete_deferred_models()\n"
             "print(before, Early.__pydantic_complete__, Early(later={'name': 'y'}).later.name)")
    shown = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert shown == ["False", "True", "y"]


def test_a_fork_sets_logging_up_from_the_remembered_configuration_until_what_it_came_from_changes(tmp_path):
    """flows.warm_logging: Prefect's logging configuration is loaded once and given again while its template, the
    settings object and the PREFECT_LOGGING_ variables are the ones it came from; a change of any one is loaded
    anew, and the handlers made follow it."""
    probe = ("import logging, os, pathlib, sys\n"
             "os.environ.pop('PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL', None)\n"
             "from prefect.logging import configuration\n"
             "from prefect.logging.handlers import PrefectConsoleHandler\n"
             "from prefect.settings import PREFECT_LOGGING_SETTINGS_PATH, temporary_settings\n"
             "from flows.warm_logging import setup_logging_from_memory\n"
             "loads, real = [], configuration.load_logging_config\n"
             "configuration.load_logging_config = lambda path: loads.append(path) or real(path)\n"
             "template = pathlib.Path(sys.argv[1])\n"
             "default = configuration.DEFAULT_LOGGING_SETTINGS_PATH.read_text()\n"
             "def shown():\n"
             "    setup_logging_from_memory()\n"
             "    console = [h for h in logging.getLogger().handlers if isinstance(h, PrefectConsoleHandler)]\n"
             "    print(len(loads), console[0].level, console[0].stream is sys.stderr)\n"
             "with temporary_settings({PREFECT_LOGGING_SETTINGS_PATH: template}):\n"
             "    template.write_text(default)\n"
             "    shown(); shown()\n"
             "    template.write_text(default.replace('console:\\n    level: 0', 'console:\\n    level: 40'))\n"
             "    shown(); shown()\n"
             "    os.environ['PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL'] = 'WARNING'\n"
             "    shown(); shown()\n"
             "with temporary_settings({PREFECT_LOGGING_SETTINGS_PATH: template}):\n"
             "    shown()\n")
    shown = subprocess.run([sys.executable, "-c", probe, str(tmp_path / "logging.yml")], capture_output=True,
                           text=True, check=True).stdout.splitlines()
    assert shown == ["1 0 True", "1 0 True", "2 40 True", "2 40 True", "3 30 True", "3 30 True", "4 30 True"]
