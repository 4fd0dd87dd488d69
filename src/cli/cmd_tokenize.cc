// cli/cmd_tokenize.cc — `mineru-cpp tokenize`: text -> ids, or --decode ids -> text.

#include <cstdio>

#include "cli/commands.h"
#include "cli/common.h"

namespace mineru::cli {
namespace {

struct TokenizeFlags {
  std::string model, text, decode;
  bool skip_special = false;
};

int RunTokenize(const TokenizeFlags& f) {
  if (f.text.empty() == f.decode.empty()) return Fail("give exactly one of --text or --decode");
  auto tok = LoadTokenizer(ResolveModelDir(f.model));
  if (!tok.ok()) return Fail(tok.status().ToString());
  if (!f.decode.empty()) {
    auto ids = ParseIdList(f.decode);
    if (!ids.ok()) return Fail("--decode: " + ids.status().message());
    auto text = (*tok)->Decode(*ids, f.skip_special);
    if (!text.ok()) return Fail(text.status().ToString());
    std::printf("%s\n", text->c_str());
    return 0;
  }
  auto ids = (*tok)->Encode(f.text);
  if (!ids.ok()) return Fail(ids.status().ToString());
  std::string line;
  for (size_t i = 0; i < ids->size(); ++i) line += (i ? " " : "") + std::to_string((*ids)[i]);
  std::printf("%s\n", line.c_str());
  return 0;
}

}  // namespace

void AddTokenize(CLI::App& app, Action* run) {
  auto f = std::make_shared<TokenizeFlags>();
  CLI::App* c = app.add_subcommand("tokenize", "Encode text to token ids or decode ids to text");
  c->add_option("--model", f->model,
                "Model directory holding tokenizer.json, or a GGUF language model (folder or file)");
  c->add_option("--text", f->text, "Text to encode (special tokens written in it are matched)");
  c->add_option("--decode", f->decode, "Space-separated ids to decode");
  c->add_flag("--skip-special-tokens", f->skip_special, "Drop special tokens when decoding");
  c->callback([f, run] { *run = [f](const kernels::KernelConfig&) { return RunTokenize(*f); }; });
}

}  // namespace mineru::cli
