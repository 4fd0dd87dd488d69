#include "model/decoder.h"

#include <cmath>

#include "kernels/kernels.h"

namespace mineru {

Decoder::Decoder(const TextConfig& config, const TextWeights& weights) : c_(config), w_(weights) {
  const int half = c_.head_dim / 2;
  inv_freq_.resize(half);
  for (int j = 0; j < half; ++j) {
    inv_freq_[j] = static_cast<float>(1.0 / std::pow(c_.rope_theta, (2.0 * j) / c_.head_dim));
  }
  dim_component_.resize(half);
  int d = 0;
  for (int comp = 0; comp < 3; ++comp) {
    for (int k = 0; k < c_.mrope_section[comp] && d < half; ++k) dim_component_[d++] = comp;
  }
}

void Decoder::Embed(const int32_t* ids, int64_t n, float* out) const {
  for (int64_t i = 0; i < n; ++i) kernels::WeightRowToF32(w_.embed_tokens, ids[i], out + i * c_.hidden_size);
}

void Decoder::RopeTables(int64_t n, const int64_t* pt, const int64_t* ph, const int64_t* pw,
                         std::vector<float>* cos, std::vector<float>* sin) const {
  const int D = c_.head_dim, half = D / 2;
  cos->resize(n * D);
  sin->resize(n * D);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t pos[3] = {pt[i], ph[i], pw[i]};
    for (int j = 0; j < half; ++j) {
      // torch computes position * inv_freq in fp32.
      const float angle = static_cast<float>(pos[dim_component_[j]]) * inv_freq_[j];
      const float c = std::cos(angle), s = std::sin(angle);
      (*cos)[i * D + j] = (*cos)[i * D + j + half] = c;
      (*sin)[i * D + j] = (*sin)[i * D + j + half] = s;
    }
  }
}

void Decoder::Forward(const float* embeds, int64_t n, const int64_t* pos_t, const int64_t* pos_h,
                      const int64_t* pos_w, KvCache* cache, float* hidden_out, ThreadPool* pool,
                      DecoderTrace* trace) const {
  const int64_t Hd = c_.hidden_size, D = c_.head_dim, NH = c_.num_heads, KV = c_.num_kv_heads;
  const int64_t QD = NH * D, KD = KV * D, I = c_.intermediate_size;
  if (static_cast<int>(cache->k.size()) != c_.num_layers) cache->Reset(c_.num_layers);
  const int64_t past = cache->len, total = past + n;

  std::vector<float> cos, sin;
  RopeTables(n, pos_t, pos_h, pos_w, &cos, &sin);

  std::vector<float> x(embeds, embeds + n * Hd);
  std::vector<float> normed(n * Hd), q(n * QD), attn(n * QD), tmp(n * Hd), gate(n * I), up(n * I);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  for (int l = 0; l < c_.num_layers; ++l) {
    const DecoderLayerWeights& L = w_.layers[l];
    kernels::RmsNorm(x.data(), n, Hd, L.input_norm.data(), c_.rms_norm_eps, normed.data());
    kernels::MatMul(normed.data(), n, L.q, L.q_b.data(), q.data(), pool);
    std::vector<float>& kc = cache->k[l];
    std::vector<float>& vc = cache->v[l];
    kc.resize(total * KD);
    vc.resize(total * KD);
    float* knew = kc.data() + past * KD;
    kernels::MatMul(normed.data(), n, L.k, L.k_b.data(), knew, pool);
    kernels::MatMul(normed.data(), n, L.v, L.v_b.data(), vc.data() + past * KD, pool);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t h = 0; h < NH; ++h) kernels::RopeRotateHalf(q.data() + i * QD + h * D, D, &cos[i * D], &sin[i * D]);
      for (int64_t h = 0; h < KV; ++h) kernels::RopeRotateHalf(knew + i * KD + h * D, D, &cos[i * D], &sin[i * D]);
    }
    kernels::AttentionShape s;
    s.n_q = n;
    s.n_kv = total;
    s.num_heads = NH;
    s.num_kv_heads = KV;
    s.head_dim = D;
    s.q_stride = QD;
    s.kv_stride = KD;
    s.out_stride = QD;
    s.causal = true;
    s.scale = scale;
    kernels::Attention(q.data(), kc.data(), vc.data(), s, attn.data(), pool);
    kernels::MatMul(attn.data(), n, L.o, nullptr, tmp.data(), pool);
    for (int64_t i = 0; i < n * Hd; ++i) x[i] += tmp[i];

    kernels::RmsNorm(x.data(), n, Hd, L.post_attn_norm.data(), c_.rms_norm_eps, normed.data());
    kernels::MatMul(normed.data(), n, L.gate, nullptr, gate.data(), pool);
    kernels::MatMul(normed.data(), n, L.up, nullptr, up.data(), pool);
    kernels::SiluMul(gate.data(), up.data(), n * I, gate.data());
    kernels::MatMul(gate.data(), n, L.down, nullptr, tmp.data(), pool);
    for (int64_t i = 0; i < n * Hd; ++i) x[i] += tmp[i];
    if (trace && l == 0) trace->layer0 = x;
  }
  cache->len = total;
  kernels::RmsNorm(x.data(), n, Hd, w_.final_norm.data(), c_.rms_norm_eps, hidden_out);
}

void Decoder::Logits(const float* hidden, int64_t n, float* logits, ThreadPool* pool) const {
  kernels::MatMul(hidden, n, w_.lm_head, nullptr, logits, pool);
}

}  // namespace mineru
