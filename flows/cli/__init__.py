"""The ``benchwright`` command line: ``app``, its commands wired here in the order ``--help`` lists them.

One module per idea: ``apps`` (the groups and the global ``--config``), ``terminal`` (consoles, configuration,
storage and one-line failures every command shares), ``printers`` (what flows' summaries print as), and a module
per family of commands. ``build NAME`` is made from each registered benchmark's declarations (``build``,
``build_options``). ``python -m flows.cli`` runs it as the ``benchwright`` command does."""

from __future__ import annotations

from flows.cli.apps import (
    annotate_app,
    app,
    blobs_app,
    catalog_app,
    config_app,
    models_app,
    records_app,
    release_app,
    review_app,
)
from flows.cli.build import mount_build_commands
from flows.cli.configuration import config_show, models_check, models_list, sample_world
from flows.cli.evaluate import BenchmarkDefaultsCommand, evaluate
from flows.cli.housekeeping import blobs_gc, blobs_unpack, catalog_copy, runs
from flows.cli.leaderboard import leaderboard
from flows.cli.people import annotate, annotate_unlock, hash_password_command, review_recheck
from flows.cli.printers import print_main_job, run_headline
from flows.cli.records import records_lineage, records_list, records_show, records_stats
from flows.cli.releases import release_create, release_diff, release_export, release_list, release_verify, stats
from flows.cli.run_command import run

__all__ = ["app", "print_main_job", "run_headline"]

app.command()(run)
app.command("sample-world")(sample_world)
app.command()(stats)
app.command()(runs)
app.command(cls=BenchmarkDefaultsCommand)(evaluate)
app.command()(leaderboard)
for group, name, command in (
        (blobs_app, "gc", blobs_gc), (blobs_app, "unpack", blobs_unpack), (catalog_app, "copy", catalog_copy),
        (release_app, "list", release_list), (release_app, "create", release_create),
        (release_app, "verify", release_verify), (release_app, "diff", release_diff),
        (release_app, "export", release_export),
        (records_app, "show", records_show), (records_app, "lineage", records_lineage),
        (records_app, "list", records_list), (records_app, "stats", records_stats),
        (models_app, "list", models_list), (models_app, "check", models_check), (config_app, "show", config_show),
        (annotate_app, "hash-password", hash_password_command), (annotate_app, "unlock", annotate_unlock),
        (review_app, "recheck", review_recheck)):
    group.command(name)(command)
annotate_app.callback()(annotate)
mount_build_commands()

