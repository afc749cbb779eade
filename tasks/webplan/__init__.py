"""The web-agent planning tests (temporal ordering, future state, plan assessment on MiniWob++ and web trajectories)."""
