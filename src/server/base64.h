// server/base64.h — RFC 4648 base64 (data URLs in chat requests, images in results).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace mineru::server {

std::string Base64Encode(std::string_view data);
// Strict decode (whitespace ignored, padding optional); nullopt on any invalid character.
std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace mineru::server
