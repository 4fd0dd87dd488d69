// pipeline/common/code_language.h — the language label of a code block, for both output versions.
#pragma once

#include <string>
#include <string_view>

namespace mineru::pipeline {

// Stand-in for Magika's guess_language_by_text: a keyword heuristic returning Magika-style labels
// ("python", "cpp", "c", "java", "javascript", "go", "rust", "shell", "sql", "html", ...), "empty" for
// empty input and "txt" when nothing fits. Magika is a neural model, so this cannot match it exactly.
std::string GuessCodeLanguage(std::string_view code);

}  // namespace mineru::pipeline
