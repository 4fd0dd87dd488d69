// pipeline/common/code_language.cc — a stand-in for MinerU's guess_language_by_text.
//
// MinerU labels code blocks with Magika (a neural file-type classifier) and falls back to "txt" when
// Magika says "unknown". We cannot ship that model, so this is a small keyword heuristic that returns
// the same label vocabulary for the common, unambiguous cases. It is the one part of the assembly
// that is knowingly approximate; callers can plug in their own classifier (AssembleOptions).
#include <algorithm>
#include <cctype>
#include <string>

#include "pipeline/common/code_language.h"
#include "pipeline/common/py_text.h"

namespace mineru::pipeline {

namespace {

bool Has(std::string_view s, std::string_view needle) { return s.find(needle) != std::string_view::npos; }

// True if some line, after leading whitespace, starts with `prefix`.
bool LineStartsWith(std::string_view s, std::string_view prefix) {
  for (std::string_view line : py::SplitLines(s)) {
    if (py::StartsWith(py::LStrip(line), prefix)) return true;
  }
  return false;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

std::string GuessCodeLanguage(std::string_view code) {
  if (code.empty()) return "empty";
  const std::string lower = Lower(code);
  if (Has(code, "<?php")) return "php";
  if (Has(code, "\\documentclass") || Has(code, "\\begin{document}")) return "latex";
  if (py::StartsWith(code, "#!") && (Has(code, "sh\n") || Has(code, "bash"))) return "shell";
  if (LineStartsWith(code, "#include")) {
    if (Has(code, "std::") || Has(code, "cout") || Has(code, "template<") || Has(code, "template <") ||
        Has(code, "namespace ") || Has(code, "class ")) {
      return "cpp";
    }
    return "c";
  }
  if (Has(code, "using System") || Has(code, "Console.Write")) return "cs";
  if (Has(code, "public class ") || Has(code, "public static void main") || Has(code, "System.out."))
    return "java";
  if (LineStartsWith(code, "package main") || (LineStartsWith(code, "func ") && Has(code, "{"))) return "go";
  if (Has(code, "fn main") || Has(code, "let mut ") || Has(code, "println!") ||
      LineStartsWith(code, "use std::")) {
    return "rust";
  }
  if (LineStartsWith(code, "def ") || LineStartsWith(code, "import ") || LineStartsWith(code, "from ") ||
      LineStartsWith(code, "class ") || Has(code, "print(") || Has(code, "self.") || Has(code, "elif ")) {
    if (!Has(code, ";\n") && !Has(code, "{\n")) return "python";
  }
  if (Has(code, "console.log") || LineStartsWith(code, "function ") || Has(code, "=> {") ||
      LineStartsWith(code, "const ") || LineStartsWith(code, "let ") || LineStartsWith(code, "var ")) {
    return "javascript";
  }
  if (LineStartsWith(lower, "select ") || LineStartsWith(lower, "insert into") ||
      LineStartsWith(lower, "create table") || LineStartsWith(lower, "update ") ||
      LineStartsWith(lower, "delete from")) {
    return "sql";
  }
  if (LineStartsWith(lower, "<!doctype html") || LineStartsWith(lower, "<html") ||
      LineStartsWith(lower, "<div")) {
    return "html";
  }
  if (LineStartsWith(code, "echo ") || LineStartsWith(code, "export ") || LineStartsWith(code, "sudo ") ||
      LineStartsWith(code, "pip install") || LineStartsWith(code, "cd ")) {
    return "shell";
  }
  return "txt";
}

}  // namespace mineru::pipeline
