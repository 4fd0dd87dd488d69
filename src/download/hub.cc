// download/hub.cc — the names a download is made of: hub sources, the repository a --repo choice
// means on each hub, default revisions and model folders, the endpoint (flag, environment,
// default), URL encoding, which files of a repository the engine needs (GGUF pair included), and
// whether a model folder looks complete. No network and no transfer (download.cc).
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "download/download.h"
#include "download/download_internal.h"

namespace mineru {
namespace download_internal {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace download_internal

using download_internal::EndsWith;
using download_internal::FileSize;
using download_internal::kIndexName;
using download_internal::kRequiredSmall;
using download_internal::kSingleName;
using download_internal::kSmallFiles;
using download_internal::Lower;
using download_internal::ShardsOfIndex;

StatusOr<HubSource> ParseHubSource(std::string_view name) {
  const std::string n = Lower(std::string(name));
  if (n == "huggingface" || n == "hf" || n == "hugging-face") return HubSource::kHuggingFace;
  if (n == "modelscope" || n == "ms") return HubSource::kModelScope;
  return InvalidArgumentError("unknown source '" + std::string(name) + "' (use huggingface or modelscope)");
}

const char* HubSourceName(HubSource source) {
  return source == HubSource::kHuggingFace ? "huggingface" : "modelscope";
}

std::string DefaultRepo(HubSource source) { return *ResolveRepo("", source); }

StatusOr<std::string> ResolveRepo(std::string_view choice, HubSource source) {
  const std::string c = Lower(std::string(choice));
  if (choice.find('/') != std::string_view::npos) return std::string(choice);
  std::string name;
  if (c.empty() || c == "pro" || c == "pro-2605" || c == "2605")
    name = "MinerU2.5-Pro-2605-1.2B";
  else if (c == "pro-2604" || c == "2604")
    name = "MinerU2.5-Pro-2604-1.2B";
  else if (c == "2509")
    name = "MinerU2.5-2509-1.2B";
  else if (c == "gguf" || c == "pro-2605-gguf")
    return std::string(kGgufRepo);
  else
    return InvalidArgumentError("unknown --repo '" + std::string(choice) +
                                "' (use pro-2605, pro-2604, 2509, gguf or owner/name)");
  return (source == HubSource::kHuggingFace ? "opendatalab/" : "OpenDataLab/") + name;
}

std::string DefaultRevision(HubSource source) {
  return source == HubSource::kHuggingFace ? "main" : "master";
}

std::string DefaultModelDir(const std::string& repo) {
  const std::string r = repo.empty() ? DefaultRepo(HubSource::kHuggingFace) : repo;
  const size_t slash = r.rfind('/');
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.cache/mineru-cpp/" +
         (slash == std::string::npos ? r : r.substr(slash + 1));
}

StatusOr<std::pair<std::string, std::string>> PickGgufPair(const std::vector<std::string>& names) {
  std::vector<std::string> lms, projs;
  for (const std::string& n : names) {
    if (n.find('/') != std::string::npos || !EndsWith(Lower(n), ".gguf")) continue;
    (Lower(n).rfind("mmproj", 0) == 0 ? projs : lms).push_back(n);
  }
  std::sort(lms.begin(), lms.end());
  std::sort(projs.begin(), projs.end());
  auto with = [](const std::vector<std::string>& v, const char* tag) -> std::optional<std::string> {
    // The tag as a word of the name ("f16" is not "bf16").
    for (const auto& n : v) {
      const std::string l = Lower(n);
      for (size_t at = l.find(tag); at != std::string::npos; at = l.find(tag, at + 1)) {
        if (at == 0 || !std::isalnum(static_cast<unsigned char>(l[at - 1]))) return n;
      }
    }
    return std::nullopt;
  };
  if (projs.empty()) return NotFoundError("has no mmproj-*.gguf vision file");
  std::optional<std::string> lm = with(lms, "q8_0");
  if (!lm && lms.size() == 1) lm = lms[0];
  if (!lm) {
    std::string all;
    for (const auto& n : lms) all += (all.empty() ? "" : ", ") + n;
    return NotFoundError(lms.empty() ? "has no language-model .gguf"
                                     : "has no Q8_0 language model among " + all);
  }
  std::optional<std::string> proj = with(projs, "q8_0");
  if (!proj) proj = with(projs, "f16");
  return std::make_pair(*lm, proj ? *proj : projs[0]);
}

std::string ResolveEndpoint(const DownloadOptions& o) {
  std::string e = o.endpoint;
  if (e.empty()) {
    if (o.source == HubSource::kHuggingFace) {
      if (const char* v = std::getenv("HF_ENDPOINT"); v && *v)
        e = v;
      else
        e = "https://huggingface.co";
    } else {
      if (const char* v = std::getenv("MODELSCOPE_ENDPOINT"); v && *v)
        e = v;
      else if (const char* d = std::getenv("MODELSCOPE_DOMAIN"); d && *d)
        e = d;
      else
        e = "https://www.modelscope.cn";
    }
  }
  if (e.find("://") == std::string::npos) e = "https://" + e;
  while (!e.empty() && e.back() == '/') e.pop_back();
  return e;
}

std::string UrlEncode(std::string_view s, bool keep_slash) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

bool IsWantedModelFile(std::string_view path) {
  for (const char* n : kSmallFiles) {
    if (path == n) return true;
  }
  return path == kSingleName || path == kIndexName;
}

bool ModelLooksComplete(const std::string& dir) {
  std::error_code ec;
  bool lm = false, proj = false;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string n = Lower(e.path().filename().string());
    if (!EndsWith(n, ".gguf")) continue;
    (n.rfind("mmproj", 0) == 0 ? proj : lm) = true;
  }
  if (lm && proj) return true;
  for (int i = 0; i < kRequiredSmall; ++i) {
    if (!FileSize(dir + "/" + kSmallFiles[i])) return false;
  }
  if (FileSize(dir + "/" + kSingleName)) return true;
  if (!FileSize(dir + "/" + kIndexName)) return false;
  StatusOr<std::vector<std::string>> shards = ShardsOfIndex(dir + "/" + kIndexName);
  if (!shards.ok()) return false;
  for (const std::string& s : *shards) {
    if (!FileSize(dir + "/" + s)) return false;
  }
  return true;
}

}  // namespace mineru
