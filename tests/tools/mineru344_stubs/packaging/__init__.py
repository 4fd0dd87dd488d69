class _Any:
    def __getattr__(self, n): return _Any()
    def __call__(self, *a, **k): return _Any()
    def __mro_entries__(self, b): return (object,)
def __getattr__(n): return _Any()
