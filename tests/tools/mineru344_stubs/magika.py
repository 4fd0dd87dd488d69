class Magika: pass
