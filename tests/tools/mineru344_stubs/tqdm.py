def tqdm(*a,**k): pass
