// engine/output_processor.h — the engine's output processor (internal to engine/): turns each
// sampled token into the request's visible output (ids, text through the incremental
// detokenizer), decides whether the sequence ends, and completes its handle. Loop thread only;
// a handle's own mutex guards what its caller reads.
#pragma once

#include <cstdint>
#include <string>

#include "engine/finish_reason.h"
#include "engine/sequence.h"

namespace mineru {

enum class TokenOutcome { kContinue, kStop, kLength };

// Records token `tok` sampled at time `now`: the sampler's history, the generated ids, the text
// piece (none for a stop token) and the handle's pending output; wakes the handle's reader.
TokenOutcome EmitToken(Sequence& s, int32_t tok, double now);

// Completes the sequence's output in two halves around the engine's bookkeeping, so that a
// caller woken by the handle already sees the sequence's resources returned:
// SealCompletion flushes the detokenizer's tail and fills the completion (its reason and error);
// DeliverCompletion hands it to the handle and wakes every waiter.
void SealCompletion(Sequence& s, FinishReason reason, const std::string& error, double now);
void DeliverCompletion(Sequence& s);

}  // namespace mineru
