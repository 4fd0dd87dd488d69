// tests/util/json_file.h — JSON files in tests: one read and parsed with a test failure (not an
// exception) when it is missing or invalid, and a fixture's JSON parsed once per process.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"

namespace mineru::testing {

// The file's JSON; a test failure naming the path, and a discarded value, when it cannot be read or
// is not valid JSON. JsonT: nlohmann::ordered_json keeps the file's key order (where a test compares
// with output written in insertion order).
template <typename JsonT = nlohmann::json>
JsonT LoadJson(const std::string& path) {
  StatusOr<std::string> s = ReadFileToString(path);
  EXPECT_TRUE(s.ok()) << path << ": " << s.status().ToString();
  JsonT j = JsonT::parse(s.ok() ? *s : std::string("null"), nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << path << " is not valid JSON";
  return j;
}

// LoadJson<JsonT>(tests/fixtures/<name>), read on the first call and kept for the process (the golden
// files are large and a test binary reads them in every case).
template <typename JsonT = nlohmann::json>
const JsonT& FixtureJson(const std::string& name) {
  static std::map<std::string, JsonT> loaded;
  auto it = loaded.find(name);
  if (it == loaded.end()) {
    it = loaded.emplace(name, LoadJson<JsonT>(std::string(MINERU_FIXTURES_DIR) + "/" + name)).first;
  }
  return it->second;
}

}  // namespace mineru::testing
