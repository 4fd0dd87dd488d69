// libFuzzer target: replay files.
#include <unistd.h>

#include <string>

#include "base/mapped_file.h"
#include "pipeline/backend.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/mineru_fuzz_replay_" + std::to_string(::getpid()) + ".json";
  (void)mineru::WriteStringToFile(path, std::string(reinterpret_cast<const char*>(data), size));
  auto b = mineru::pipeline::MakeReplayBackend(path);
  if (b.ok()) {
    mineru::RgbImage img;
    mineru::pipeline::RecognitionTask layout;
    layout.image = &img;
    (void)(*b)->Layout(0, layout);
    (void)(*b)->Recognize(0, {});
  }
  return 0;
}
