// cli/bench_host.h — `bench --workload host`: the host's share of a decode step, measured with a
// model backend that computes nothing, so what remains is what the engine does around the model
// (scheduling, block tables, input embeddings, candidate queries, sampling) — the work a GPU
// leaves to the CPU at every step.
#pragma once

#include <cstdint>
#include <memory>

#include "model/backend.h"

namespace mineru::cli {

// Wraps the engine's backend (kept for EncodeImages) with one whose Forward computes nothing and
// whose logits favour a different token at every step and row, so the sampled tokens keep
// changing (penalties and n-gram indexes grow as they would). Candidate requests get their touched
// ids and top_k others, as a GPU's reader answers; whole-row requests get one fixed row.
std::unique_ptr<ModelBackend> MakeNullBackend(std::unique_ptr<ModelBackend> inner, int64_t vocab);

}  // namespace mineru::cli
