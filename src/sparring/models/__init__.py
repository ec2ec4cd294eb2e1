"""The model layer: sparring's own LLMs (simulated user, judge). See `base.Model`."""
