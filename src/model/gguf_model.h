// model/gguf_model.h — MinerU2.5 as llama.cpp's GGUF pair: a `qwen2vl` language model file and a
// `clip` mmproj file with the `qwen2vl_merger` projector (what MinerU 4 downloads and runs).
//
// Facts from llama.cpp's convert_hf_to_gguf.py (Qwen2VLModel / Qwen2VLVisionModel) and clip.cpp:
//   LM keys   qwen2vl.{block_count, embedding_length, feed_forward_length, attention.head_count,
//             attention.head_count_kv, attention.layer_norm_rms_epsilon, rope.freq_base,
//             rope.dimension_sections [4, last one 0], context_length}; no head-dim key (n_embd/n_head).
//   LM names  token_embd, blk.N.{attn_norm, attn_q/k/v (+bias), attn_output, ffn_norm, ffn_gate,
//             ffn_up, ffn_down}, output_norm, output (absent when tied). No q/k permutation (NEOX rope).
//   mmproj    clip.vision.{block_count, embedding_length, attention.head_count, patch_size,
//             projection_dim, attention.layer_norm_epsilon, image_mean, image_std}; the MLP width
//             comes from the tensors (the converter writes the LM width as feed_forward_length).
//             v.patch_embd.weight / .weight.1: the Conv3d kernel split along time, {P,P,C,E} each;
//             v.blk.N.{ln1, ln2, attn_q/k/v (the fused qkv split by rows), attn_out, ffn_up (fc1),
//             ffn_down (fc2)}; v.post_ln (merger.ln_q); mm.0 / mm.2 (merger.mlp.0 / .2).
//   Neither file stores the pixel budget or spatial_merge_size: MinerU's budget (3,136..1,605,632
//   pixels) and merge 2 apply unless a preprocessor_config.json sits beside the GGUF files.
// Tensor types used in place from the mapping: F32, F16, BF16 (dense views) and Q8_0, Q4_0 (their
// blocks are our q8/q4 layout, kernels/quant.h). Rebuilt at load (small): the patch kernel (two
// halves -> one Conv3d matrix, f32) and, only if q/k/v are not adjacent in the file, the fused qkv.
#pragma once

#include <memory>
#include <string>

#include "base/gguf.h"
#include "base/status.h"
#include "model/config.h"

namespace mineru {

// Where a model's files are. `dir` always holds the folder (configs, tokenizer.json beside
// safetensors; an optional preprocessor_config.json beside GGUF files).
struct ModelFiles {
  std::string dir;
  std::string lm_gguf;      // "" for a safetensors checkpoint
  std::string mmproj_gguf;  // set iff lm_gguf is
  bool gguf() const { return !lm_gguf.empty(); }
};

// model: a safetensors checkpoint folder, a folder holding a GGUF pair (told apart by
// general.architecture, not by name), or an LM .gguf file. mmproj: the vision .gguf when model
// names an LM file (else searched beside it). Errors name what is missing or ambiguous.
StatusOr<ModelFiles> ResolveModelFiles(const std::string& model, const std::string& mmproj = "");

// The configuration the GGUF pair describes (token ids from the LM's tokenizer arrays; Qwen2-VL's
// image and vision ids when the LM declares no vocabulary, tokenizer.ggml.model "none").
StatusOr<ModelConfig> GgufModelConfig(const GgufFile& lm, const GgufFile& mmproj);
// Pixel budget and normalisation: preprocessor_config.json in dir when present, else MinerU's
// budget with the mmproj's image_mean / image_std.
StatusOr<ImageProcessorConfig> GgufImageConfig(const GgufFile& mmproj, const std::string& dir);

}  // namespace mineru
