class ndarray: pass
def __getattr__(n):
    return None
