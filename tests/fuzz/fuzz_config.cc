// libFuzzer target: config.json and preprocessor_config.json parsing.
#include <string>

#include "model/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string s(reinterpret_cast<const char*>(data), size);
  (void)mineru::ParseModelConfig(s);
  (void)mineru::ParseImageProcessorConfig(s);
  return 0;
}
