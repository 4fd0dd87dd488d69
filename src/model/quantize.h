// model/quantize.h — weights in int8/4-bit formats, chosen at load or written ahead of time.
//
// "--quant bf16|q8|q4|q4_0" picks the format of every Linear layer of the decoder; the ViT
// blocks, the merger and the LM head use q8 whenever a quantized format is chosen. The patch embedding and
// the token-embedding table stay as stored. A pre-quantized model (WriteQuantizedModel) stores each quantized
// matrix as a U8 tensor [rows, row_bytes] with metadata "quant.<name>" = format, and loads by mmap with no
// conversion.
#pragma once

#include <string>

#include "base/status.h"
#include "base/thread_pool.h"
#include "kernels/quant.h"
#include "model/weights.h"

namespace mineru {

// "bf16"/"" -> kNone (weights as stored), "q8" -> kQ8_0, "q4" (= "q4_0") -> kQ4_0 (group 32),
// "q4_g128" -> kQ4_G128. Group 32 is the default 4-bit format: measured on the real shape
// (bench --workload accuracy/decode, 2 threads), group 32 keeps the final hidden states at cosine
// 0.981 vs 0.977 for group 128, at 54 vs 82 decode tok/s — both above the target speed.
StatusOr<QuantType> ParseQuantName(const std::string& name);
// The format used for the LM head when the rest is `t` (q8 for every quantized format: its
// argmax decides each token).
QuantType LmHeadQuant(QuantType t);
// The format of the vision encoder and merger (q8 for every quantized format: measured, 4-bit
// ViT weights drop the final hidden-state cosine to ~0.85 on the real shape, and the ViT's
// large matrix products run from dequantized panels anyway, so 4 bits would buy no speed).
QuantType VisionQuant(QuantType t);
// The format of the decoder's attention projections (q8 for every quantized format; the 4-bit
// formats apply to the MLP, ~85% of the decoder's weights).
QuantType AttentionQuant(QuantType t);

// Replaces the dense matrices of w with quantized copies owned by w (t != kNone), then gives the
// quantized decoder matrices (quantized now or stored so) the integer panels of ctx's kernels.
Status QuantizeWeights(ModelWeights* w, QuantType t, const kernels::KernelContext& ctx);

// Writes a pre-quantized checkpoint of the model in src_dir to out_dir (configs copied).
Status WriteQuantizedModel(const std::string& src_dir, const std::string& out_dir, QuantType t,
                           ThreadPool* pool);

}  // namespace mineru
