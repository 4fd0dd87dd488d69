// pipeline/extract/policy.cc — the defaults of ExtractionPolicy (see policy.h).
#include "pipeline/extract/policy.h"

namespace mineru::pipeline {

std::vector<DocumentQuestion> ExtractionPolicy::DocumentQuestions(
    const std::vector<std::vector<ContentBlock>>& /*pages*/, const std::vector<int>& /*page_numbers*/) const {
  return {};
}

}  // namespace mineru::pipeline
