// cli/commands.h — one registration function per subcommand. Each adds its flags to the app and
// sets *run to the action; the action returns 0 on success or prints one error line and returns 1.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

#include "kernels/context.h"

namespace mineru::cli {

// The action runs the kernels (if it runs any) with the configuration main() built once
// (kernels::KernelConfigFromEnv).
using Action = std::function<int(const kernels::KernelConfig& kernels)>;

void AddGenerate(CLI::App& app, Action* run);
void AddTokenize(CLI::App& app, Action* run);
void AddGenModel(CLI::App& app, Action* run);
void AddParse(CLI::App& app, Action* run);
void AddBench(CLI::App& app, Action* run);
void AddChat(CLI::App& app, Action* run);
void AddServe(CLI::App& app, Action* run);
void AddDownload(CLI::App& app, Action* run);
void AddQuantize(CLI::App& app, Action* run);

// Prints "error: <message>" on stderr and returns 1.
int Fail(const std::string& message);

}  // namespace mineru::cli
