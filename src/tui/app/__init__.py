"""app — the Textual UI. It reaches the engine only through the engine's client API."""
