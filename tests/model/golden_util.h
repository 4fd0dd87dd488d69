// tests/model/golden_util.h — reading the Hugging Face golden tensors and comparing arrays.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "base/safetensors.h"

namespace mineru::testing {

// A fixture's path: under $MINERU_TEST_FIXTURES when it is set (test binaries run away from the
// tree they were built in: scripts/gpu_check.sh --run), else under the source tree's fixtures.
inline std::string FixturePath(const std::string& rel) {
  const char* moved = std::getenv("MINERU_TEST_FIXTURES");
  return std::string(moved != nullptr && *moved != '\0' ? moved : MINERU_FIXTURES_DIR) + "/" + rel;
}

class Golden {
 public:
  explicit Golden(const std::string& model, const std::string& golden_case) {
    auto f = SafetensorsFile::Open(FixturePath(model + "/golden_" + golden_case + ".safetensors"));
    if (!f.ok())
      ADD_FAILURE() << f.status().ToString();
    else
      file_ = std::move(f).value();
  }
  bool Has(const std::string& name) const { return file_ && file_->Find(name) != nullptr; }
  std::vector<float> F32(const std::string& name) const {
    const TensorInfo* t = file_ ? file_->Find(name) : nullptr;
    if (!t) {
      ADD_FAILURE() << "golden tensor missing: " << name;
      return {};
    }
    return ReadAsF32(*t).value();
  }
  std::vector<int64_t> I64(const std::string& name) const {
    const TensorInfo* t = file_ ? file_->Find(name) : nullptr;
    if (!t) {
      ADD_FAILURE() << "golden tensor missing: " << name;
      return {};
    }
    return ReadAsI64(*t).value();
  }
  std::vector<int64_t> Shape(const std::string& name) const {
    const TensorInfo* t = file_ ? file_->Find(name) : nullptr;
    return t ? t->shape : std::vector<int64_t>{};
  }

 private:
  std::unique_ptr<SafetensorsFile> file_;
};

// Max |a-b| <= atol + rtol*|b| element-wise; reports the first offender.
inline void ExpectClose(const std::vector<float>& got, const std::vector<float>& want, float atol, float rtol,
                        const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what << ": size";
  float worst = 0;
  size_t worst_i = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const float err = std::fabs(got[i] - want[i]) - rtol * std::fabs(want[i]);
    if (!(err <= worst) || std::isnan(got[i])) {
      worst = std::isnan(got[i]) ? INFINITY : err;
      worst_i = i;
    }
  }
  EXPECT_LE(worst, atol) << what << ": element " << worst_i << " got " << got[worst_i] << " want "
                         << want[worst_i];
}

// Per row of `cols` values, the cosine of got's row against want's: mean and worst over the rows
// (a NaN row counts as -1, the worst).
struct Cosines {
  double mean = 0, worst = 1;
};
inline Cosines RowCosines(const std::vector<float>& got, const std::vector<float>& want, int64_t cols) {
  Cosines c;
  const int64_t rows = static_cast<int64_t>(want.size()) / cols;
  for (int64_t r = 0; r < rows; ++r) {
    double dot = 0, a2 = 0, b2 = 0;
    for (int64_t j = 0; j < cols; ++j) {
      const double a = got[r * cols + j], b = want[r * cols + j];
      dot += a * b;
      a2 += a * a;
      b2 += b * b;
    }
    const double cos = dot / std::sqrt(std::max(a2 * b2, 1e-300));
    c.mean += cos / static_cast<double>(rows);
    c.worst = std::min(c.worst, std::isnan(cos) ? -1.0 : cos);
  }
  return c;
}

}  // namespace mineru::testing
