// tests/engine/engine_test_util.h — what the engine tests share: the golden cases of a fixture
// model as engine requests (image runs compacted to one image token, the goldens' greedy ids) and
// seeded requests unrelated to them.
#pragma once

#include <string>
#include <vector>

#include "../model/golden_util.h"
#include "base/mapped_file.h"
#include "engine/engine.h"
#include "image/decode.h"

namespace mineru {
namespace testing {

struct GoldenCase {
  std::string model, name;
  std::vector<int32_t> raw_ids;  // image runs compacted to one token
  std::vector<RgbImage> images;
  std::vector<int32_t> want;
};

inline std::vector<GoldenCase> LoadCases(const std::string& model, int32_t image_token) {
  std::vector<GoldenCase> out;
  for (const char* name : {"one_image", "two_images", "text_only"}) {
    Golden g(model, name);
    GoldenCase c{model, name, {}, {}, {}};
    int64_t prev = -1;
    for (int64_t id : g.I64("input_ids")) {
      if (!(id == image_token && prev == image_token)) c.raw_ids.push_back(static_cast<int32_t>(id));
      prev = id;
    }
    for (int64_t id : g.I64("generated_ids")) c.want.push_back(static_cast<int32_t>(id));
    const std::string meta = ReadFileToString(FixturePath(model + "/golden_" + name + ".json")).value();
    for (const char* img : {"image0.png", "image1.png", "image2.png"}) {
      if (meta.find(img) != std::string::npos) c.images.push_back(DecodeImageFile(FixturePath(img)).value());
    }
    out.push_back(std::move(c));
  }
  return out;
}

inline EngineRequest GreedyRequest(const GoldenCase& c) {
  EngineRequest r;
  r.prompt_ids = c.raw_ids;
  r.images = c.images;
  r.max_new_tokens = 16;
  r.ignore_eos = true;
  return r;
}

inline EngineRequest Unrelated(int i, int vocab) {
  EngineRequest r;
  for (int k = 0; k < 5 + 7 * i; ++k) r.prompt_ids.push_back((k * 37 + i * 101) % std::min(vocab, 1900));
  r.max_new_tokens = 3 + 5 * i;
  r.ignore_eos = true;
  r.sampling.temperature = 0.8f;
  r.sampling.top_k = 20;
  r.sampling.seed = 1000 + i;
  return r;
}

}  // namespace testing
}  // namespace mineru
