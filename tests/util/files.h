// tests/util/files.h — files and folders for tests: the fixtures folder, working folders under
// the build tree (three kinds, by how they are shared and cleaned), whole-file reads, and a private
// copy of a fixture model that a test may damage.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

#include "base/mapped_file.h"

namespace mineru::testing {

// tests/fixtures (the CMake definition every test target gets).
inline const std::string kFx = MINERU_FIXTURES_DIR;

// <build>/test_tmp/<name>, created when missing and kept as it is: the same folder on every run (a
// rerun overwrites rather than piles up), which tests running in parallel may share.
inline std::string TestDir(const std::string& name) {
  const std::string d = std::string(MINERU_BINARY_DIR) + "/test_tmp/" + name;
  std::error_code ec;
  std::filesystem::create_directories(d, ec);
  return d;
}

// TestDir(name), emptied first: nothing from an earlier run is left in it. For a name that only
// one test uses.
inline std::string EmptyTestDir(const std::string& name) {
  const std::string d = std::string(MINERU_BINARY_DIR) + "/test_tmp/" + name;
  std::error_code ec;
  std::filesystem::remove_all(d, ec);
  return TestDir(name);
}

// <build>/test_tmp/<name>_<pid>, empty: one per process, so that the processes of one test
// binary (ctest runs each test in its own) never share it, even where they use the same name.
inline std::string TempDir(const std::string& name) {
  return EmptyTestDir(name + "_" + std::to_string(::getpid()));
}

// The whole file; "" and a test failure naming the path when it cannot be read.
inline std::string ReadAll(const std::string& path) {
  StatusOr<std::string> s = ReadFileToString(path);
  EXPECT_TRUE(s.ok()) << path << ": " << s.status().ToString();
  return s.ok() ? *s : std::string();
}

// A private copy of the fixture model `model` (its config, preprocessor config and weights, and its
// tokenizer.json where it has one) in <dir>/model, which a test may damage; returns that folder.
inline std::string CopyModel(const std::string& model, const std::string& dir) {
  const std::string d = dir + "/model";
  std::error_code ec;
  std::filesystem::create_directories(d, ec);
  for (const char* f : {"config.json", "preprocessor_config.json", "model.safetensors", "tokenizer.json"}) {
    const std::string from = kFx + "/" + model + "/" + f;
    if (std::string(f) == "tokenizer.json" && !FileExists(from)) continue;
    EXPECT_TRUE(WriteStringToFile(d + "/" + f, ReadAll(from)).ok()) << d << "/" << f;
  }
  return d;
}

}  // namespace mineru::testing
