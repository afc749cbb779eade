"""The environment is the locked one: every package benchwright needs, transitive ones included, is in
requirements.lock, and what is installed is exactly the locked version (`make lock` refreshes the lock). The
packages in scripts/no-deps.txt (maze-dataset) are installed without their declared requirements, so those are
not walked: only the packages themselves must be locked and installed."""

from __future__ import annotations

import importlib.metadata as metadata
import re
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

REPO = Path(__file__).resolve().parent.parent
EXTRAS = ("models", "dev", "vic", "web")  # what scripts/setup.sh installs


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _locked() -> dict[str, Version]:
    pins = {}
    for line in (REPO / "requirements.lock").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins[_normalise(name)] = Version(version)
    return pins


def _no_deps() -> dict[str, Version]:
    """scripts/no-deps.txt: the packages scripts/setup.sh installs with `pip install --no-deps`, at their pins."""
    pins = {}
    for line in (REPO / "scripts" / "no-deps.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            requirement = Requirement(line)
            (specifier,) = requirement.specifier  # one exact pin a package: the one place its version is set
            assert specifier.operator == "==", f"{line}: pin an exact version"
            pins[_normalise(requirement.name)] = Version(specifier.version)
    return pins


def _needed() -> set[str]:
    """Every distribution benchwright's requirements (with the installed extras) pull in, walked through the
    installed packages' own requirements with their environment markers."""
    needed: set[str] = set()
    pending = [(requirement, EXTRAS) for requirement in metadata.requires("benchwright") or []]
    while pending:
        text, extras = pending.pop()
        requirement = Requirement(text)
        if requirement.marker and not any(requirement.marker.evaluate({"extra": e}) for e in ("", *extras)):
            continue
        name = _normalise(requirement.name)
        if name in needed:
            continue
        needed.add(name)
        pending += [(r, tuple(requirement.extras)) for r in metadata.requires(name) or []]
    return needed


def test_every_needed_package_is_installed_at_its_locked_version():
    locked = _locked()
    needed = _needed()
    assert needed - set(locked) == set(), "needed but not locked: run `make lock`"
    differing = {}
    for name in needed:
        installed = Version(metadata.version(name))
        if Version(installed.public) != locked[name]:
            differing[name] = f"installed {installed}, locked {locked[name]}"
    assert differing == {}, "run `make setup` (or `make lock` after changing pyproject.toml)"


def test_the_no_deps_packages_are_locked_and_installed_without_their_requirements():
    locked = _locked()
    no_deps = _no_deps()
    assert "maze-dataset" in no_deps  # ViC-Bench's mazes
    differing = {}
    for name, pinned in no_deps.items():
        installed = Version(metadata.version(name))
        if not (locked.get(name) == pinned == Version(installed.public)):
            differing[name] = f"no-deps.txt {pinned}, locked {locked.get(name)}, installed {installed}"
    assert differing == {}, "run `make lock` after changing scripts/no-deps.txt, then `make setup`"
    # maze-dataset hard-requires jupyter and ipykernel, which it does not need and which slow `import prefect`:
    # --no-deps keeps them out of the lock (nothing else benchwright needs pulls them in).
    assert {"jupyter", "ipykernel"} & set(locked) == set()
    assert locked["muutils"] < Version("0.9")  # muutils 0.9 breaks maze-dataset's import


def test_the_lock_keeps_the_pins_that_matter():
    locked = _locked()
    assert locked["sqlalchemy"] < Version("2.1")  # prefect 3.8.8's scheduler fails with 2.1
    assert locked["fastapi"] < Version("0.155")
    assert locked["torch"] == Version("2.13.0")
    assert "torchvision" not in locked
