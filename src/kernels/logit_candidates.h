// kernels/logit_candidates.h — the sampler's candidate logits of one row (engine/sampler.h,
// CandidateQuery): the most likely tokens outside a set of excluded ones. The CPU form, and the
// twin of the CUDA kernel kernels/cuda/logits_topk.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mineru {
namespace kernels {

// The ids of the top_k largest logits of row[vocab] among the tokens that are not in
// excluded[n_excluded] (ascending, distinct; ids outside [0, vocab) are ignored) and whose logit
// is not NaN: most likely first, the lower id first on ties (-0 and +0 tie); fewer when fewer
// remain. O(vocab + top_k log top_k).
std::vector<int32_t> TopLogitsExcluding(const float* row, int32_t vocab, const int32_t* excluded,
                                        size_t n_excluded, int top_k);

}  // namespace kernels
}  // namespace mineru
