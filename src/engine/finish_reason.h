// engine/finish_reason.h — why a request's generation ended, as the engine's results carry it.
#pragma once

namespace mineru {

enum class FinishReason {
  kNone,       // not finished yet
  kStop,       // a stop token (the model's end token or one of the request's stop ids)
  kLength,     // max_new_tokens generated
  kCancelled,  // cancelled by its caller, past its deadline, or the engine shut down
  kError,      // the engine failed the request (Completion::error says why)
};

// The one spelling of each reason, for the CLI, the logs and the OpenAI API's "finish_reason":
// "stop", "length", "cancelled", "error" ("" while not finished).
constexpr const char* FinishReasonName(FinishReason r) {
  switch (r) {
    case FinishReason::kNone:
      return "";
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kCancelled:
      return "cancelled";
    case FinishReason::kError:
      return "error";
  }
  return "";
}

}  // namespace mineru
