// model/quantize.h — weights in int8/4-bit formats, chosen at load or written ahead of time.
//
// "--quant bf16|q8|q4|q4_0" picks the format of every Linear layer of the ViT blocks, the
// merger and the decoder layers (and the LM head, kept at q8 for the 4-bit formats: its
// argmax decides every token). The patch embedding and the token-embedding table stay as
// stored. A pre-quantized model (WriteQuantizedModel) stores each quantized matrix as a U8
// tensor [rows, row_bytes] with metadata "quant.<name>" = format, and loads by mmap with no
// conversion.
#pragma once

#include <string>

#include "base/status.h"
#include "base/thread_pool.h"
#include "kernels/quant.h"
#include "model/weights.h"

namespace mineru {

// "bf16"/"" -> kNone (weights as stored), "q8" -> kQ8_0, "q4" -> kQ4_G128, "q4_0" -> kQ4_0.
StatusOr<QuantType> ParseQuantName(const std::string& name);
// The format used for the LM head when the rest is `t`.
QuantType LmHeadQuant(QuantType t);

// Replaces the dense matrices of w with quantized copies owned by w.
Status QuantizeWeights(ModelWeights* w, QuantType t, ThreadPool* pool);

// Writes a pre-quantized checkpoint of the model in src_dir to out_dir (configs copied).
Status WriteQuantizedModel(const std::string& src_dir, const std::string& out_dir, QuantType t, ThreadPool* pool);

}  // namespace mineru
