"""The evaluation harnesses users bring (lmms-eval, VLMEvalKit), installed for the tests from PyPI and run in a
subprocess of their own, so the round trips read what the harness itself writes.

Neither joins the project's environment: lmms-eval needs torchvision, which the pinned torch lacks
(../shared/ENVIRONMENT.md), and both pull hundreds of packages for models the tests never load. Each is installed
with ``pip install --target DIR --no-deps`` at pinned versions, with only the packages the modules the tests run
import (the project's own environment provides the rest: torch, datasets, pandas, transformers...), into
``.cache/harness/<name>-<hash>/`` (git-ignored; the hash covers the pins and the Python version, so a changed pin
installs afresh). The first ``make test`` on a machine installs them (measured: lmms-eval ~25 s, VLMEvalKit ~5 s);
later runs find them. A failed install fails the tests that need it, with pip's output: it never skips them.

VLMEvalKit's package ``__init__`` files import every model and dataset it has (torchvision, decord, vLLM...): the
runner makes ``vlmeval`` and ``vlmeval.dataset`` bare packages over the installed folders, so its real modules
(``smp``, ``dataset.image_base``, ``image_mcq``, ``image_vqa``, ``utils.multiple_choice``...) load with their own
imports and nothing else; ``build_dataset``, which lives in ``vlmeval/dataset/__init__.py``, is taken from that
file's source and run as written.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "harness"
SUPPORT = Path(__file__).resolve().parent

# lmms-eval 0.7.3 and what its evaluator, task loader, CLI and logger import that the project lacks
LMMS_EVAL = ("lmms-eval==0.7.3", "accelerate==1.15.0", "aiohappyeyeballs==2.7.1", "aiohttp==3.14.5",
             "aiosignal==1.4.0", "chardet==7.7.0", "DataProperty==1.1.1", "evaluate==0.4.6", "frozenlist==1.8.0",
             "loguru==0.7.3", "lxml==6.1.3", "mbstrdecoder==1.1.5", "multidict==7.2.1", "openai==3.57.0",
             "pathvalidate==3.3.1", "portalocker==4.4.2", "propcache==0.5.4", "pytablewriter==1.2.1",
             "sacrebleu==2.6.0", "tabledata==1.3.5", "tabulate==0.10.0", "tcolorpy==0.1.7", "tenacity==9.2.1",
             "typepy==2.0.0", "yarl==1.25.1")
# VLMEvalKit (PyPI: ms-vlmeval) 0.0.20 and what its file, dataset and multiple-choice modules import; xlsxwriter is
# the engine its ``dump`` writes a prediction .xlsx with (without it, dump falls back to a .pkl)
VLMEVALKIT = ("ms-vlmeval==0.0.20", "sty==1.0.6", "tabulate==0.10.0", "validators==0.36.0", "XlsxWriter==3.3.1")


class HarnessInstallError(RuntimeError):
    """A harness could not be installed: the tests that need it fail with pip's output."""


def installed(name: str, requirements: tuple[str, ...]) -> Path:
    """The folder ``requirements`` are installed in (``pip install --target --no-deps``), installing them the first
    time; one process installs while the others (pytest workers) wait."""
    digest = hashlib.sha256("\n".join([sys.version, *requirements]).encode()).hexdigest()[:12]
    target = CACHE / f"{name}-{digest}"
    done = target / ".installed"
    if done.exists():
        return target
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return target
        shutil.rmtree(target, ignore_errors=True)
        partial = CACHE / f"{name}-{digest}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        command = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
                   "--target", str(partial), *requirements]
        finished = subprocess.run(command, capture_output=True, text=True, timeout=900)
        if finished.returncode != 0:
            log = "\n".join(line for line in (finished.stdout + finished.stderr).splitlines()
                            if not line.startswith("WARNING: Location"))
            raise HarnessInstallError(f"installing {name} ({' '.join(requirements)}) failed:\n{log[-4000:]}")
        partial.rename(target)
        done.write_text("\n".join(requirements) + "\n")
    return target


def harness_env(target: Path, home: Path) -> dict[str, str]:
    """The environment a harness runs in: its folder and this one on the path (its runner scripts), offline, its
    caches (Hugging Face datasets' among them) in ``home``."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "HF_"))}
    env.update(PYTHONPATH=os.pathsep.join([str(target), str(SUPPORT)]), HF_HOME=str(home / "hf"),
               HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", LMUData=str(home / "LMUData"),
               TOKENIZERS_PARALLELISM="false", PYTHONDONTWRITEBYTECODE="1")
    return env


def run_script(script: str, args: list[str], target: Path, home: Path, timeout: int = 600) -> str:
    """Run ``tests/support/<script>`` with the harness in ``target``; its output, or an error holding it."""
    finished = subprocess.run([sys.executable, str(SUPPORT / script), *args], capture_output=True, text=True,
                              env=harness_env(target, home), cwd=home, timeout=timeout)
    if finished.returncode != 0:
        raise AssertionError(f"{script} {' '.join(args)} failed ({finished.returncode}):\n"
                             f"{finished.stdout[-3000:]}\n{finished.stderr[-6000:]}")
    return finished.stdout
