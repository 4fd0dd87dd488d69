// pipeline/common/html_dom.cc — see html_dom.h.
#include "pipeline/common/html_dom.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>

#include "pipeline/common/html_entities.h"
#include "pipeline/common/py_text.h"

namespace mineru::pipeline::html {

namespace {

bool IsVoid(const std::string& n) {  // bs4 HTMLTreeBuilder.DEFAULT_EMPTY_ELEMENT_TAGS
  static const std::set<std::string> kVoid = {"area",    "base",   "br",     "col",     "embed",    "hr",
                                              "img",     "input",  "keygen", "link",    "menuitem", "meta",
                                              "param",   "source", "track",  "wbr",     "basefont", "bgsound",
                                              "command", "frame",  "image",  "isindex", "nextid",   "spacer"};
  return kVoid.count(n) > 0;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Returns true when an unquoted value ran up to `end` (as in `colspan=2/>`, value "2/"): the '/' before
// the '>' then belongs to the value and the tag is not self-closing (html.parser's attrfind).
bool ParseAttrs(const std::string& s, size_t i, size_t end, Node* el) {
  bool value_to_end = false;
  while (i < end) {
    while (i < end && (std::isspace(static_cast<unsigned char>(s[i])) || s[i] == '/')) ++i;
    size_t k = i;
    while (k < end && !std::isspace(static_cast<unsigned char>(s[k])) && s[k] != '=' && s[k] != '/') ++k;
    if (k == i) break;
    std::string key = Lower(s.substr(i, k - i)), value;
    i = k;
    while (i < end && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i < end && s[i] == '=') {
      ++i;
      while (i < end && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
      if (i < end && (s[i] == '"' || s[i] == '\'')) {
        const char q = s[i];
        const size_t e = s.find(q, i + 1);
        const size_t stop = (e == std::string::npos || e > end) ? end : e;
        value = UnescapeAttr(s.substr(i + 1, stop - i - 1));
        i = stop + 1;
      } else {
        size_t e = i;
        while (e < end && !std::isspace(static_cast<unsigned char>(s[e]))) ++e;
        value = UnescapeAttr(s.substr(i, e - i));
        value_to_end = e == end && e > i;
        i = e;
      }
    }
    // bs4's html.parser builder (on_duplicate_attribute=REPLACE): a repeated attribute keeps its first
    // position but takes the last value.
    bool seen = false;
    for (auto& a : el->attrs) {
      if (a.first == key) {
        a.second = value;
        seen = true;
      }
    }
    if (!seen) el->attrs.emplace_back(key, value);
  }
  return value_to_end;
}

// bs4's "minimal" formatter: & < > become entities (text and attribute values alike).
std::string EscapeText(const std::string& s) { return py::HtmlEscapeNoQuote(s); }

// bs4 EntitySubstitution.quoted_attribute_value: double quotes, unless the value holds '"' and no
// "'" (then single quotes); with both, '"' becomes &quot; inside double quotes.
std::string QuotedAttr(const std::string& raw) {
  std::string v = EscapeText(raw);
  if (v.find('"') == std::string::npos) return "\"" + v + "\"";
  if (v.find('\'') == std::string::npos) return "'" + v + "'";
  std::string q;
  for (char c : v) q += c == '"' ? std::string("&quot;") : std::string(1, c);
  return "\"" + q + "\"";
}

void SerializeTo(const Node& n, std::string& out) {
  if (n.is_text) {
    out += n.raw ? n.text : EscapeText(n.text);
    return;
  }
  if (!n.name.empty()) {
    out += "<" + n.name;
    auto attrs = n.attrs;
    std::stable_sort(attrs.begin(), attrs.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [k, v] : attrs) out += " " + k + "=" + QuotedAttr(v);
    if (IsVoid(n.name) && n.children.empty()) {
      out += "/>";
      return;
    }
    out += ">";
  }
  for (const auto& c : n.children) SerializeTo(*c, out);
  if (!n.name.empty()) out += "</" + n.name + ">";
}

// The '>' closing the start tag at lt; a '>' inside a quoted attribute value does not count.
size_t StartTagEnd(const std::string& s, size_t lt) {
  for (size_t i = lt + 1; i < s.size(); ++i) {
    if (s[i] == '>') return i;
    if (s[i] != '=') continue;
    size_t q = i + 1;
    while (q < s.size() && std::isspace(static_cast<unsigned char>(s[q]))) ++q;
    if (q < s.size() && (s[q] == '"' || s[q] == '\'')) {
      const size_t e = s.find(s[q], q + 1);
      if (e == std::string::npos) return std::string::npos;
      i = e;
    }
  }
  return std::string::npos;
}

// bs4 (BeautifulSoup.endData): a string of ASCII whitespace only becomes "\n" if it holds a newline,
// else " " (outside <pre>/<textarea>).
void CollapseBlankStrings(Node* n, bool preserve) {
  preserve = preserve || n->name == "pre" || n->name == "textarea";
  for (auto& c : n->children) {
    if (!c->is_text) {
      CollapseBlankStrings(c.get(), preserve);
    } else if (!c->raw && !preserve && !c->text.empty() &&
               c->text.find_first_not_of(" \n\t\f\r") == std::string::npos) {
      c->text = c->text.find('\n') != std::string::npos ? "\n" : " ";
    }
  }
}

// bs4 accumulates character data until the next tag event (start, end, comment), so text is merged
// into the previous text node only while `*open`.
void AddText(Node* cur, const std::string& text, bool* open) {
  if (text.empty()) return;
  if (*open && !cur->children.empty() && cur->children.back()->is_text && !cur->children.back()->raw) {
    cur->children.back()->text += text;
    return;
  }
  auto t = std::make_unique<Node>();
  t->is_text = true;
  t->text = text;
  Append(cur, std::move(t));
  *open = true;
}

// Where the "&#" reference at i fails html.parser's charref regex &#(?:[0-9]+|[xX][0-9a-fA-F]+)[^0-9a-fA-F]
// (the end of a chunk that a '<' follows counts as a terminator; `at_doc_end`: nothing follows).
bool CharrefFails(const std::string& s, size_t i, size_t end, bool at_doc_end) {
  const bool hex = i + 2 < end && (s[i + 2] == 'x' || s[i + 2] == 'X');
  size_t e = i + 2 + (hex ? 1 : 0);
  const size_t b = e;
  while (e < end && (hex ? std::isxdigit(static_cast<unsigned char>(s[e]))
                         : std::isdigit(static_cast<unsigned char>(s[e]))))
    ++e;
  if (e == b) return true;
  if (e == end) return at_doc_end;
  return std::isxdigit(static_cast<unsigned char>(s[e])) != 0;
}

// Text s[i, end) (end: the next '<' or the end of s). html.parser runs feed() then close(): a failing
// "&#" with a ';' somewhere after it emits "&#" and stops feed(); close() resumes, and at the next
// failing "&#" (or one with no ';' after it) everything left in the document is emitted as literal
// text. Returns true when the rest of the document was consumed that way.
bool EmitText(const std::string& s, size_t i, size_t end, Node* cur, bool* open, bool* bailed) {
  const bool doc_end = end == s.size();
  for (size_t a = s.find("&#", i); a != std::string::npos && a < end; a = s.find("&#", a + 2)) {
    if (!CharrefFails(s, a, end, doc_end)) continue;
    AddText(cur, UnescapeText(std::string_view(s).substr(i, a - i)), open);
    if (*bailed || s.find(';', a) == std::string::npos) {
      AddText(cur, s.substr(a), open);
      return true;
    }
    *bailed = true;
    AddText(cur, "&#", open);
    i = a + 2;
  }
  std::string_view chunk = std::string_view(s).substr(i, end - i);
  std::string tail;
  if (doc_end) {  // a reference running into the end of the document is left as written
    const size_t amp = chunk.rfind('&');
    if (amp != std::string_view::npos && amp + 1 < chunk.size() &&
        std::isalpha(static_cast<unsigned char>(chunk[amp + 1]))) {
      size_t e = amp + 2;
      while (e < chunk.size() &&
             (std::isalnum(static_cast<unsigned char>(chunk[e])) || chunk[e] == '-' || chunk[e] == '.'))
        ++e;
      if (e == chunk.size()) {
        tail = chunk.size() - amp == 2 ? std::string(chunk.substr(amp + 1)) : std::string(chunk.substr(amp));
        chunk = chunk.substr(0, amp);
      }
    }
  }
  AddText(cur, UnescapeText(chunk) + tail, open);
  return false;
}

// Parse's state: the node text and tags go into, and bs4's bookkeeping.
struct TreeBuilder {
  const std::string& s;
  Node* cur;
  bool open = false;                          // bs4's pending string: text may still join the last text node
  bool bailed = false;                        // see EmitText
  std::vector<std::string> already_closed{};  // bs4's already_closed_empty_element

  // A comment ("<!--"), declaration ("<!") or processing instruction ("<?") at lt, kept as raw
  // text. Returns where the document goes on.
  size_t Markup(size_t lt) {
    const bool comment = s.compare(lt, 4, "<!--") == 0;
    size_t e = comment ? s.find("-->", lt + 4) : s.find('>', lt);
    e = e == std::string::npos ? s.size() : e + (comment ? 3 : 1);
    auto raw = std::make_unique<Node>();
    raw->is_text = raw->raw = true;
    raw->text = s.substr(lt, e - lt);
    // bs4's Doctype (a declaration starting "DOCTYPE", case-sensitive) is written with a trailing "\n".
    if (raw->text.compare(0, 10, "<!DOCTYPE ") == 0 || raw->text == "<!DOCTYPE>") raw->text += "\n";
    Append(cur, std::move(raw));
    open = false;
    return e;
  }

  // A start tag, an end tag, or what html.parser makes of a '<' that starts neither, at lt.
  // Returns where the document goes on.
  size_t Tag(size_t lt) {
    const bool closing = lt + 1 < s.size() && s[lt + 1] == '/';
    size_t name_at = lt + (closing ? 2 : 1);
    if (closing) {  // html.parser's endtagfind: "</ td>" closes td
      while (name_at < s.size() && std::isspace(static_cast<unsigned char>(s[name_at]))) ++name_at;
    }
    const size_t gt = closing ? s.find('>', lt) : StartTagEnd(s, lt);
    if (closing && gt != std::string::npos && name_at < s.size() &&
        !std::isalpha(static_cast<unsigned char>(s[name_at]))) {
      // html.parser: "</>" is dropped; "</" + no tag name is a bogus comment up to the next '>'.
      if (gt != lt + 2) {
        auto raw = std::make_unique<Node>();
        raw->is_text = raw->raw = true;
        raw->text = "<!--" + s.substr(lt + 2, gt - lt - 2) + "-->";
        Append(cur, std::move(raw));
        open = false;
      }
      return gt + 1;
    }
    if (gt == std::string::npos || name_at >= s.size() ||
        !std::isalpha(static_cast<unsigned char>(s[name_at]))) {
      AddText(cur, "<", &open);  // not a tag: literal text
      return lt + 1;
    }
    size_t ne = name_at;
    while (ne < gt && !std::isspace(static_cast<unsigned char>(s[ne])) && s[ne] != '/') ++ne;
    const std::string name = Lower(s.substr(name_at, ne - name_at));
    if (closing) {
      if (SwallowedEndTag(name)) return gt + 1;
      for (Node* n = cur; n && !n->name.empty(); n = n->parent) {
        if (n->name == name) {
          cur = n->parent;
          break;
        }
      }
    } else {
      StartTag(name, lt, ne, gt);
    }
    open = false;  // a tag event (even an ignored end tag) ends bs4's pending string
    return gt + 1;
  }

  // bs4: the end tag of a void element opened without "/>" (<br>...</br>) is swallowed, with no
  // tag event, so the pending string goes on.
  bool SwallowedEndTag(const std::string& name) {
    const auto it = std::find(already_closed.begin(), already_closed.end(), name);
    if (it == already_closed.end()) return false;
    already_closed.erase(it);
    return true;
  }

  // The element `name` whose tag spans s[lt, gt] (attributes from ne on); entered unless void or
  // self-closing.
  void StartTag(const std::string& name, size_t lt, size_t ne, size_t gt) {
    auto el = std::make_unique<Node>();
    el->name = name;
    const bool slash_in_value = ParseAttrs(s, ne, gt, el.get());
    Node* raw = el.get();
    Append(cur, std::move(el));
    const bool self_closing = gt > lt && s[gt - 1] == '/' && !slash_in_value;
    if (!IsVoid(name) && !self_closing) cur = raw;
    if (IsVoid(name) && !self_closing) already_closed.push_back(name);
  }
};

}  // namespace

int Node::IntAttr(const std::string& key, int def) const {
  for (const auto& [k, v] : attrs) {
    if (k != key) continue;
    char* end = nullptr;
    const long x = std::strtol(v.c_str(), &end, 10);
    return (end && end != v.c_str()) ? static_cast<int>(x) : def;
  }
  return def;
}

void Node::SetAttr(const std::string& key, const std::string& value) {
  for (auto& a : attrs) {
    if (a.first == key) {
      a.second = value;
      return;
    }
  }
  attrs.emplace_back(key, value);
}

void Node::RemoveAttr(const std::string& key) {
  attrs.erase(std::remove_if(attrs.begin(), attrs.end(), [&](const auto& a) { return a.first == key; }),
              attrs.end());
}

std::unique_ptr<Node> Parse(const std::string& s) {
  auto root = std::make_unique<Node>();
  TreeBuilder b{s, root.get()};
  size_t i = 0;
  while (i < s.size()) {
    const size_t lt = s.find('<', i);
    if (EmitText(s, i, lt == std::string::npos ? s.size() : lt, b.cur, &b.open, &b.bailed) ||
        lt == std::string::npos)
      break;
    if (s.compare(lt, 4, "<!--") == 0 || s.compare(lt, 2, "<!") == 0 || s.compare(lt, 2, "<?") == 0) {
      i = b.Markup(lt);
    } else {
      i = b.Tag(lt);
    }
  }
  CollapseBlankStrings(root.get(), false);
  return root;
}

std::string Serialize(const Node& root) {
  std::string out;
  SerializeTo(root, out);
  return out;
}

std::vector<Node*> FindAll(Node* root, std::initializer_list<const char*> names) {
  std::vector<Node*> out;
  std::vector<Node*> stack;
  for (auto it = root->children.rbegin(); it != root->children.rend(); ++it) stack.push_back(it->get());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    if (n->is_text) continue;
    for (const char* nm : names) {
      if (n->name == nm) {
        out.push_back(n);
        break;
      }
    }
    for (auto it = n->children.rbegin(); it != n->children.rend(); ++it) stack.push_back(it->get());
  }
  return out;
}

std::string GetText(const Node* n) {
  if (n->is_text) return n->raw ? std::string() : n->text;
  std::string out;
  for (const auto& c : n->children) out += GetText(c.get());
  return out;
}

std::unique_ptr<Node> Extract(Node* n) {
  Node* p = n->parent;
  if (!p) return nullptr;
  for (auto it = p->children.begin(); it != p->children.end(); ++it) {
    if (it->get() == n) {
      std::unique_ptr<Node> own = std::move(*it);
      p->children.erase(it);
      own->parent = nullptr;
      return own;
    }
  }
  return nullptr;
}

void Append(Node* parent, std::unique_ptr<Node> child) {
  child->parent = parent;
  parent->children.push_back(std::move(child));
}

void InsertBefore(Node* sibling, std::unique_ptr<Node> node) {
  Node* p = sibling->parent;
  for (auto it = p->children.begin(); it != p->children.end(); ++it) {
    if (it->get() == sibling) {
      node->parent = p;
      p->children.insert(it, std::move(node));
      return;
    }
  }
}

std::unique_ptr<Node> DeepCopy(const Node* n) {
  auto c = std::make_unique<Node>();
  c->is_text = n->is_text;
  c->raw = n->raw;
  c->text = n->text;
  c->name = n->name;
  c->attrs = n->attrs;
  for (const auto& ch : n->children) Append(c.get(), DeepCopy(ch.get()));
  return c;
}

}  // namespace mineru::pipeline::html
