// model/gen_model.h — writes a random-weight checkpoint of a given architecture preset.
//
// Used for benchmarks (speed does not depend on weight values) and tests. Deterministic for a
// seed. Output: config.json (flat on-disk form), preprocessor_config.json, model.safetensors,
// and tokenizer.json copied from tokenizer_path when given.
#pragma once

#include <cstdint>
#include <string>

#include "base/safetensors.h"
#include "base/status.h"

namespace mineru {

struct GenModelOptions {
  std::string preset = "mineru2.5";  // "mineru2.5" (the real shape) or "tiny"
  DType dtype = DType::kBF16;        // kBF16, kF16 or kF32
  uint64_t seed = 0;
  std::string tokenizer_path;  // copied as tokenizer.json when non-empty
};

// The config.json text of a preset, or an error for an unknown preset.
StatusOr<std::string> PresetConfigJson(const std::string& preset);

Status GenerateRandomModel(const std::string& out_dir, const GenModelOptions& options);

}  // namespace mineru
