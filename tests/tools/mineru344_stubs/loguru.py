class _L:
    def __getattr__(self, n):
        return lambda *a, **k: None
logger = _L()
