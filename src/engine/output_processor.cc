#include "engine/output_processor.h"

#include <algorithm>
#include <mutex>

namespace mineru {

// The only writer of a handle's shared state (RequestHandle befriends it).
struct HandleWriter {
  static void Append(RequestHandle& h, const std::string& text, const int32_t* id) {
    {
      std::lock_guard<std::mutex> lock(h.mu_);
      h.pending_text_ += text;
      if (id) h.pending_ids_.push_back(*id);
    }
    h.cv_.notify_all();
  }
  static void Complete(RequestHandle& h, const Completion& c) {
    {
      std::lock_guard<std::mutex> lock(h.mu_);
      h.completion_ = c;
      h.done_ = true;
    }
    h.cv_.notify_all();
  }
};

TokenOutcome EmitToken(Sequence& s, int32_t tok, double now) {
  s.sampler->Accept(tok);
  s.generated.push_back(tok);
  if (s.t_first == 0) s.t_first = now;
  const bool is_stop = !s.ignore_eos && std::find(s.stops.begin(), s.stops.end(), tok) != s.stops.end();
  std::string piece;
  if (s.detok && !is_stop) piece = s.detok->Push(tok);
  s.comp.text += piece;
  HandleWriter::Append(*s.handle, piece, &tok);
  if (is_stop) return TokenOutcome::kStop;
  if (static_cast<int>(s.generated.size()) >= s.max_new) return TokenOutcome::kLength;
  return TokenOutcome::kContinue;
}

void SealCompletion(Sequence& s, FinishReason reason, const std::string& error, double now) {
  if (s.detok) {
    std::string tail = s.detok->Flush();
    s.comp.text += tail;
    if (!tail.empty()) HandleWriter::Append(*s.handle, tail, nullptr);
  }
  s.comp.ids = s.generated;
  s.comp.finish_reason = reason;
  s.comp.error = error;
  s.comp.total_s = now - s.t_submit;
  s.comp.ttft_s = s.t_first > 0 ? s.t_first - s.t_submit : 0;
}

void DeliverCompletion(Sequence& s) { HandleWriter::Complete(*s.handle, s.comp); }

}  // namespace mineru
