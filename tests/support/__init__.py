"""What the tests share, named for its idea: the annotation app and its browser (app, browser, screens), the CLI
(cli), records, catalogs and images (catalog, images, episodes, scenes), small releases to evaluate (evaluation), the
main job (main_job), a kept server's code (server), local servers (chat_server, postgres_server), tiny models, the
sources every importer reads well (importer_sources) and the files the source attacks aim at (source_attacks), and
the toy benchmark. No test module imports another: what two of them need is here (fixtures: tests/conftest.py)."""
