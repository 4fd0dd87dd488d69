# Stand-in for fasttext lid: "ZH" when CJK ideographs/kana/hangul are >= 30% of non-space chars.
def detect_language(text):
    chars = [c for c in text if not c.isspace()]
    if not chars: return "EN"
    cjk = sum(1 for c in chars if '\u4e00' <= c <= '\u9fff' or '\u3040' <= c <= '\u30ff' or '\uac00' <= c <= '\ud7af')
    return "ZH" if cjk / len(chars) >= 0.3 else "EN"
