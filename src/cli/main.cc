// cli/main.cc — the mineru-cpp binary: subcommand dispatch and the last line of defence
// (any escaped exception becomes a one-line error, never an abort). Also the PDF render helper:
// `mineru-cpp __render-page ...` (never typed by a user) renders one page for a parent mineru-cpp
// whose render has a deadline (pdf/pdf.h, PdfLimits::render_helper).

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <new>

#include "base/version.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "pdf/pdf.h"

namespace mineru::cli {

int Fail(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

}  // namespace mineru::cli

int main(int argc, char** argv) {
  using namespace mineru::cli;
  // The helper side first, before anything else main does: the child does nothing but the render.
  if (argc >= 2 && std::strcmp(argv[1], mineru::kRenderHelperArg) == 0) {
    mineru::RunRenderHelper(argc - 2, argv + 2);
  }
  try {
    // Renders with a deadline (parse, serve) run in a child that is this very program:
    // /proc/self/exe names the running binary's file even after it was replaced on disk, so parent
    // and helper always speak the same protocol. Without /proc, renders stay on threads.
    if (::access("/proc/self/exe", X_OK) == 0) {
      mineru::SetDefaultRenderHelper({"/proc/self/exe", mineru::kRenderHelperArg});
    }
    CLI::App app{"mineru-cpp: MinerU2.5 document parsing and inference, natively"};
    app.require_subcommand(1);
    app.set_version_flag("--version", std::string("mineru-cpp ") + mineru::kMineruCppVersion);
    Action run;
    AddGenerate(app, &run);
    AddTokenize(app, &run);
    AddGenModel(app, &run);
    AddParse(app, &run);
    AddBench(app, &run);
    AddChat(app, &run);
    AddServe(app, &run);
    AddDownload(app, &run);
    AddQuantize(app, &run);
    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
      return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
      return app.exit(e);
    } catch (const CLI::ParseError& e) {
      return Fail(e.what());
    }
    // The kernels' configuration, read from the environment here and nowhere else.
    const mineru::StatusOr<mineru::kernels::KernelConfig> kernels = mineru::kernels::KernelConfigFromEnv();
    if (!kernels.ok()) return Fail(kernels.status().message());
    return run ? run(*kernels) : Fail("no command");
  } catch (const std::bad_alloc&) {
    return Fail("out of memory");
  } catch (const std::exception& e) {
    return Fail(e.what());
  } catch (...) {
    return Fail("unexpected failure");
  }
}
