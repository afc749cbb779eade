"""Releases in the formats evaluation harnesses read (Hugging Face datasets, VLMEvalKit, lmms-eval), and their
predictions read back. A shared room: it asks the benchmark registry for a release's benchmark and its
``HarnessMapping`` and never names a benchmark."""
