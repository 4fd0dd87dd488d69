// pipeline/replay_backend.cc — the model replaced by recorded outputs (tests, acceptance checks).

#include <chrono>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/json_parse.h"
#include "base/mapped_file.h"
#include "pipeline/backend.h"

namespace mineru::pipeline {
namespace {

struct ReplayPage {
  std::string layout;
  std::vector<std::string> blocks;
  std::vector<std::string> merges;
};

class ReplayBackend : public Backend {
 public:
  ReplayBackend(std::vector<ReplayPage> pages, int delay_ms)
      : pages_(std::move(pages)), delay_ms_(delay_ms) {}

  StatusOr<std::string> Layout(int page, const RecognitionTask&) override {
    if (delay_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
    if (page < 0 || page >= static_cast<int>(pages_.size())) {
      return NotFoundError("replay file has no entry for page " + std::to_string(page + 1));
    }
    return pages_[page].layout;
  }

  std::vector<StatusOr<std::string>> Recognize(int page, const std::vector<RecognitionTask>& tasks) override {
    std::vector<StatusOr<std::string>> out;
    const bool have = page >= 0 && page < static_cast<int>(pages_.size());
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (!have || i >= pages_[page].blocks.size()) {
        out.push_back(NotFoundError("replay file has no output for block " + std::to_string(i + 1) +
                                    " of page " + std::to_string(page + 1)));
      } else {
        out.push_back(pages_[page].blocks[i]);
      }
    }
    return out;
  }

  std::vector<StatusOr<std::string>> AskText(const std::vector<TextRequest>& requests) override {
    std::map<int, size_t> next;  // per page: the next "merges" entry
    std::vector<StatusOr<std::string>> out;
    for (const TextRequest& r : requests) {
      const size_t k = next[r.global_page]++;
      const bool have = r.global_page >= 0 && r.global_page < static_cast<int>(pages_.size()) &&
                        k < pages_[r.global_page].merges.size();
      if (!have) {
        out.push_back(NotFoundError("replay file has no cross-page table answer " + std::to_string(k + 1) +
                                    " for page " + std::to_string(r.global_page + 1)));
      } else {
        out.push_back(pages_[r.global_page].merges[k]);
      }
    }
    return out;
  }

 private:
  const std::vector<ReplayPage> pages_;  // read-only: safe from many threads
  const int delay_ms_;
};

}  // namespace

StatusOr<std::unique_ptr<Backend>> MakeReplayBackend(const std::string& path, int delay_ms) {
  MINERU_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path, 256u << 20));
  nlohmann::json j;
  if (Status s = ParseJson(text, {}, &j); !s.ok()) return s.WithPrefix(path);
  if (j.is_object() && j.contains("pages")) j = j["pages"];
  if (!j.is_array()) return InvalidArgumentError(path + ": expected a list of pages");
  std::vector<ReplayPage> pages;
  for (size_t i = 0; i < j.size(); ++i) {
    const auto& p = j[i];
    const std::string where = path + ": page " + std::to_string(i + 1);
    if (!p.is_object() || !p.contains("layout") || !p["layout"].is_string()) {
      return InvalidArgumentError(where + " needs a string 'layout'");
    }
    ReplayPage rp;
    rp.layout = p["layout"].get<std::string>();
    if (p.contains("blocks")) {
      if (!p["blocks"].is_array())
        return InvalidArgumentError(where + ": 'blocks' must be a list of strings");
      for (const auto& b : p["blocks"]) {
        if (!b.is_string()) return InvalidArgumentError(where + ": 'blocks' must be a list of strings");
        rp.blocks.push_back(b.get<std::string>());
      }
    }
    // 1.2 pages may carry "merges": answers to the cross-page table requests whose second table is
    // on this page.
    if (p.contains("merges")) {
      if (!p["merges"].is_array())
        return InvalidArgumentError(where + ": 'merges' must be a list of strings");
      for (const auto& m : p["merges"]) {
        if (!m.is_string()) return InvalidArgumentError(where + ": 'merges' must be a list of strings");
        rp.merges.push_back(m.get<std::string>());
      }
    }
    pages.push_back(std::move(rp));
  }
  return std::unique_ptr<Backend>(new ReplayBackend(std::move(pages), delay_ms));
}

}  // namespace mineru::pipeline
