// pipeline/common/html_dom.h — a small HTML tree for table HTML, parsed and serialised the way
// BeautifulSoup(html, "html.parser") does (bs4 4.13+, Python 3.11's html.parser; MinerU 3.4.4's
// utils/table_merge.py edits tables through bs4): tag and attribute names lower-cased, repeated
// attributes take the last value, character references decoded (html_entities.h), void elements
// (bs4's set) without children, unmatched end tags ignored, blank strings collapsed to "\n" or " ".
// Serialisation is str(soup): attributes sorted by name, quoted as bs4 does, text escaped minimally
// (& < >), void elements as <br/>. Checked against bs4 on random snippets (tests/fixtures/
// bs4_roundtrip_v34.json). Not modelled: bs4/html.parser corners outside that corpus (CDATA sections,
// <script>/<style> raw text, "<a<b" tag names), and other Python versions' html.parser.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace mineru::pipeline::html {

struct Node {
  bool is_text = false;
  bool raw = false;  // a comment / declaration, written back verbatim
  std::string text;  // text nodes: decoded text (raw: the markup)
  std::string name;  // elements: lower-case tag name ("" for the document root)
  std::vector<std::pair<std::string, std::string>> attrs;
  std::vector<std::unique_ptr<Node>> children;
  Node* parent = nullptr;

  // tag.get(name, default) as an int (int(cell.get("colspan", 1))); a malformed value gives `def`.
  // Not reproduced: MinerU 3.4.4's merge_table calls int() on these, so a value such as "abc" or "2x"
  // raises ValueError there and the whole document fails; here "abc" reads as `def` and "2x" as 2.
  int IntAttr(const std::string& key, int def) const;
  void SetAttr(const std::string& key, const std::string& value);
  void RemoveAttr(const std::string& key);
};

std::unique_ptr<Node> Parse(const std::string& html);
std::string Serialize(const Node& root);

// Descendant elements of `root` named one of `names`, in document order (find_all).
std::vector<Node*> FindAll(Node* root, std::initializer_list<const char*> names);
// get_text(): all descendant text concatenated.
std::string GetText(const Node* n);
// Detaches n from its parent (extract); returns ownership.
std::unique_ptr<Node> Extract(Node* n);
void Append(Node* parent, std::unique_ptr<Node> child);
void InsertBefore(Node* sibling, std::unique_ptr<Node> node);
std::unique_ptr<Node> DeepCopy(const Node* n);

}  // namespace mineru::pipeline::html
