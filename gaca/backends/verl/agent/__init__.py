"""Code that runs inside verl's or verl-agent's trainer process: the plugin, the hooks, the batch adapter,
the advantage, the served environments. The batch layout is documented in ``batch``."""
