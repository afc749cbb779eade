"""ViC-Bench: maze navigation, jigsaw, embodied planning and counting (a plugin in progress, issue 17)."""
