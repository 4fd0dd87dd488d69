// libFuzzer target: the safetensors reader on arbitrary bytes (header length, JSON, offsets).
#include <unistd.h>

#include <string>

#include "base/mapped_file.h"
#include "base/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/mineru_fuzz_st_" + std::to_string(::getpid()) + ".safetensors";
  (void)mineru::WriteStringToFile(path, std::string(reinterpret_cast<const char*>(data), size));
  auto f = mineru::SafetensorsFile::Open(path);
  if (f.ok()) {
    for (const auto& t : (*f)->tensors()) {
      if (t.nbytes <= (1u << 20)) (void)mineru::ReadAsF32(t);
    }
  }
  return 0;
}
