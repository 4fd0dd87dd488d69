#include "cli/common.h"

#include <cstdlib>
#include <sstream>

#include "base/mapped_file.h"
#include "base/thread_pool.h"

namespace mineru::cli {

std::string ResolveModelDir(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("MINERU_MODEL"); env && *env) return env;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : ".") + "/.cache/mineru-cpp/MinerU2.5-2509-1.2B";
}

StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& model_dir) {
  const std::string p = model_dir + "/tokenizer.json";
  if (!FileExists(p)) return NotFoundError("no tokenizer.json in " + model_dir + " (use --raw-ids for a model without one)");
  return Tokenizer::LoadFromFile(p);
}

StatusOr<std::vector<int32_t>> ParseIdList(const std::string& text) {
  std::vector<int32_t> ids;
  std::string s = text;
  for (char& c : s) {
    if (c == ',') c = ' ';
  }
  std::istringstream in(s);
  std::string tok;
  while (in >> tok) {
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(tok.c_str(), &end, 10);
    if (errno != 0 || end == tok.c_str() || *end != '\0' || v < 0 || v > 0x7fffffff) {
      return InvalidArgumentError("not a token id: '" + tok + "'");
    }
    ids.push_back(static_cast<int32_t>(v));
  }
  if (ids.empty()) return InvalidArgumentError("empty id list");
  return ids;
}

size_t ResolveThreads(int flag) { return flag > 0 ? static_cast<size_t>(flag) : ThreadPool::DefaultThreads(); }

}  // namespace mineru::cli

namespace mineru::cli {

void AddSamplingFlags(CLI::App* c, SamplingParams* s) {
  c->add_option("--temperature", s->temperature, "0 = greedy");
  c->add_option("--top-k", s->top_k);
  c->add_option("--top-p", s->top_p);
  c->add_option("--seed", s->seed);
  c->add_option("--presence-penalty", s->presence_penalty);
  c->add_option("--frequency-penalty", s->frequency_penalty);
  c->add_option("--repetition-penalty", s->repetition_penalty);
  c->add_option("--no-repeat-ngram-size", s->no_repeat_ngram_size);
}

}  // namespace mineru::cli
