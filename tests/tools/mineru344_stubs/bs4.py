class BeautifulSoup: pass
