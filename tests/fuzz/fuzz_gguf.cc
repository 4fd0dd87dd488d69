// libFuzzer target: a GGUF file as a model would read it — the container (counts, strings, arrays,
// tensor infos, offsets), then the model config, the tokenizer built from its metadata, and the
// weights (the same bytes as language model and as mmproj).
#include <unistd.h>

#include <string>

#include "base/gguf.h"
#include "base/mapped_file.h"
#include "model/gguf_model.h"
#include "model/weights.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/mineru_fuzz_gguf_" + std::to_string(::getpid()) + ".gguf";
  (void)mineru::WriteStringToFile(path, std::string(reinterpret_cast<const char*>(data), size));
  auto f = mineru::GgufFile::Open(path);
  if (!f.ok()) return 0;
  for (const auto& t : (*f)->tensors()) {
    if (t.nbytes > 0) (void)t.data[t.nbytes - 1];  // every tensor lies inside the mapping
  }
  (void)mineru::Tokenizer::LoadFromGguf(path);
  auto cfg = mineru::GgufModelConfig(**f, **f);
  if (!cfg.ok()) return 0;
  auto lm = mineru::GgufFile::Open(path);
  auto mm = mineru::GgufFile::Open(path);
  if (lm.ok() && mm.ok()) (void)mineru::ModelWeights::LoadGguf(std::move(*lm), std::move(*mm), *cfg);
  return 0;
}
