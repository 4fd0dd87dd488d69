// engine/chat.h — the Qwen2-VL chat template and prompt preparation: messages with text and
// images -> prompt token ids (images expanded to their pad runs) + preprocessed images.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "engine/generate.h"
#include "image/image.h"
#include "model/qwen2vl.h"
#include "tokenizer/tokenizer.h"

namespace mineru {

inline constexpr const char* kDefaultSystemPrompt = "You are a helpful assistant.";

struct ChatPart {
  enum Kind { kText, kImage } kind = kText;
  std::string text;  // kText
  int image = -1;    // kImage: index into the request's images
};

struct ChatMessage {
  std::string role;  // system, user, assistant
  std::vector<ChatPart> parts;
};

// Renders the Qwen2-VL template: a default system turn when the first message is not a system
// one; each image part becomes <|vision_start|><|image_pad|><|vision_end|>.
std::string RenderChatTemplate(const std::vector<ChatMessage>& messages, bool add_generation_prompt);

// The single-turn prompt MinerU sends: system prompt, then the images, then the text.
std::vector<ChatMessage> SingleTurn(const std::string& text, int num_images,
                                    const std::string& system = kDefaultSystemPrompt);

struct PreparedPrompt {
  std::vector<int32_t> ids;  // image pads expanded
  std::vector<ImageInput> images;
};

// Tokenizes the rendered template and preprocesses the images with the model's processor config.
StatusOr<PreparedPrompt> PreparePrompt(const Qwen2VLModel& model, const Tokenizer& tokenizer,
                                       const std::vector<ChatMessage>& messages,
                                       const std::vector<const RgbImage*>& images);

// Preprocesses one image with the model's processor config.
StatusOr<ImageInput> PreprocessForModel(const Qwen2VLModel& model, const RgbImage& image);

}  // namespace mineru
