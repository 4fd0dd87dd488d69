#include "model/flops.h"

namespace mineru {

double VisionFlops(const VisionConfig& v, const ImageGrid& g) {
  const double P = static_cast<double>(g.num_patches()), E = v.embed_dim, M = v.mlp_dim;
  const double frame = static_cast<double>(g.h * g.w);
  const double per_layer = 2 * P * E * 3 * E              // fused q/k/v
                           + 4 * frame * frame * E * g.t  // Q K^T and P V in each frame
                           + 2 * P * E * E                // output projection
                           + 2 * P * E * M * 2;           // MLP up and down
  const double merged = P / v.merge_unit(), ME = E * v.merge_unit();
  return 2 * P * v.patch_dim() * E + v.depth * per_layer + 2 * merged * ME * ME +
         2 * merged * ME * v.out_hidden_size;
}

double DecoderFlops(const TextConfig& t, int64_t past, int64_t n) {
  const double H = t.hidden_size, I = t.intermediate_size;
  const double QD = static_cast<double>(t.num_heads) * t.head_dim;
  const double KD = static_cast<double>(t.num_kv_heads) * t.head_dim;
  const double products = 2 * H * (QD + 2 * KD) + 2 * QD * H + 2 * H * I * 3;
  // Token i (0-based) of the n attends to past + i + 1 keys.
  const double keys =
      static_cast<double>(n) * static_cast<double>(past) + 0.5 * static_cast<double>(n) * (n + 1);
  return t.num_layers * (static_cast<double>(n) * products + 4 * QD * keys);
}

double LmHeadFlops(const TextConfig& t) { return 2.0 * t.hidden_size * t.vocab_size; }

}  // namespace mineru
