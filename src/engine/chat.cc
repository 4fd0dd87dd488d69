#include "engine/chat.h"

#include "image/preprocess.h"

namespace mineru {

std::string RenderChatTemplate(const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
  std::string s;
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (i == 0 && m.role != "system")
      s += std::string("<|im_start|>system\n") + kDefaultSystemPrompt + "<|im_end|>\n";
    s += "<|im_start|>" + m.role + "\n";
    for (const ChatPart& p : m.parts) {
      if (p.kind == ChatPart::kImage) {
        s += "<|vision_start|><|image_pad|><|vision_end|>";
      } else {
        s += p.text;
      }
    }
    s += "<|im_end|>\n";
  }
  if (add_generation_prompt) s += "<|im_start|>assistant\n";
  return s;
}

std::vector<ChatMessage> SingleTurn(const std::string& text, int num_images, const std::string& system) {
  ChatMessage sys{"system", {{ChatPart::kText, system, -1}}};
  ChatMessage user{"user", {}};
  for (int i = 0; i < num_images; ++i) user.parts.push_back({ChatPart::kImage, "", i});
  user.parts.push_back({ChatPart::kText, text, -1});
  return {sys, user};
}

StatusOr<ImageInput> PreprocessForModel(const Qwen2VLModel& model, const RgbImage& image) {
  const ImageProcessorConfig& ic = model.image_config();
  PreprocessConfig pc;
  pc.min_pixels = ic.min_pixels;
  pc.max_pixels = ic.max_pixels;
  pc.patch_size = ic.patch_size;
  pc.merge_size = ic.merge_size;
  pc.temporal_patch_size = ic.temporal_patch_size;
  for (int i = 0; i < 3; ++i) {
    pc.image_mean[i] = ic.image_mean[i];
    pc.image_std[i] = ic.image_std[i];
  }
  pc.rescale_factor = ic.rescale_factor;
  MINERU_ASSIGN_OR_RETURN(PixelValues pv, PreprocessImage(image, pc));
  ImageInput in;
  in.pixel_values = std::move(pv.data);
  in.grid = ImageGrid{pv.grid_t, pv.grid_h, pv.grid_w};
  return in;
}

StatusOr<PreparedPrompt> PreparePrompt(const Qwen2VLModel& model, const Tokenizer& tokenizer,
                                       const std::vector<ChatMessage>& messages,
                                       const std::vector<const RgbImage*>& images) {
  size_t image_parts = 0;
  for (const auto& m : messages) {
    for (const auto& p : m.parts) {
      if (p.kind == ChatPart::kImage) {
        if (p.image < 0 || static_cast<size_t>(p.image) != image_parts) {
          return InvalidArgumentError("image parts must reference the images in order");
        }
        ++image_parts;
      }
    }
  }
  if (image_parts != images.size()) return InvalidArgumentError("image count does not match the messages");
  const int32_t pad = model.config().image_token_id;
  auto pad_tok = tokenizer.TokenToId("<|image_pad|>");
  if (!images.empty() && (!pad_tok || *pad_tok != pad)) {
    return InvalidArgumentError("tokenizer's <|image_pad|> does not match config image_token_id");
  }
  PreparedPrompt out;
  std::vector<ImageGrid> grids;
  for (const RgbImage* im : images) {
    MINERU_ASSIGN_OR_RETURN(ImageInput in, PreprocessForModel(model, *im));
    grids.push_back(in.grid);
    out.images.push_back(std::move(in));
  }
  MINERU_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tokenizer.Encode(RenderChatTemplate(messages, true)));
  // User text could itself spell <|image_pad|>; only the template's pads may stand for images.
  size_t pads = 0;
  for (int32_t id : ids) pads += id == pad;
  if (pads != images.size()) return InvalidArgumentError("the text contains image placeholder tokens");
  MINERU_ASSIGN_OR_RETURN(out.ids, ExpandImageTokens(model, ids, grids));
  return out;
}

}  // namespace mineru
