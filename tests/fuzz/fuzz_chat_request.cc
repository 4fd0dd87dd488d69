// libFuzzer target: /v1/chat/completions body parsing (JSON, parts, data URLs, sampling fields).
#include <string>

#include "server/server.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static mineru::server::ServerOptions opt = [] {
    mineru::server::ServerOptions o;
    o.max_image_pixels = 1 << 16;
    return o;
  }();
  mineru::EngineRequest req;
  bool stream = false;
  (void)mineru::server::ParseChatCompletionBody(std::string(reinterpret_cast<const char*>(data), size), opt,
                                                &req, &stream);
  return 0;
}
