// download/download.h — fetch a MinerU2.5 checkpoint (a Hugging Face snapshot) from Hugging Face or
// ModelScope into a model directory.
//
// Only the files the engine reads are fetched (config.json, generation_config.json,
// preprocessor_config.json, tokenizer.json, tokenizer_config.json, chat_template.json and either
// model.safetensors or model.safetensors.index.json with the shards it names). Each file is written
// to NAME.part, resumed with an HTTP Range request when a .part is already there (a server that
// ignores Range restarts it from byte 0), checked against the size and SHA-256 the hub advertises,
// and renamed to NAME only when complete and verified; a mismatch deletes the .part. Files already
// present with the right size (and hash, when known) are skipped. Without network the call fails
// fast with one line that says what to do.
//
// URL layouts (endpoint = --endpoint, else $HF_ENDPOINT / $MODELSCOPE_ENDPOINT, else the public hub):
//   huggingface  list  {endpoint}/api/models/{repo}/revision/{rev}?blobs=true  ->
//   siblings[].rfilename/size/lfs.sha256
//                file  {endpoint}/{repo}/resolve/{rev}/{path}  (LFS files redirect to a CDN; the first
//                      response carries X-Linked-Size and X-Linked-Etag = "sha256")
//   modelscope   list  {endpoint}/api/v1/models/{repo}/repo/files?Revision={rev}&Recursive=true ->
//   Data.Files[].Path/Size/Sha256
//                file  {endpoint}/api/v1/models/{repo}/repo?Revision={rev}&FilePath={path}
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace mineru {

enum class HubSource { kHuggingFace, kModelScope };

// "huggingface"/"hf" or "modelscope"/"ms" (case-insensitive).
StatusOr<HubSource> ParseHubSource(std::string_view name);
const char* HubSourceName(HubSource source);  // "huggingface" / "modelscope"

// The checkpoint today's MinerU downloads (MinerU 3.3+: MinerU2.5-Pro-2605-1.2B) on each hub, and
// the default branch name.
std::string DefaultRepo(HubSource source);      // opendatalab/... (HF), OpenDataLab/... (ModelScope)
std::string DefaultRevision(HubSource source);  // "main" (HF), "master" (ModelScope)
// --repo: "" or "pro"/"pro-2605" (the default), "pro-2604", "2509", "gguf" (the Pro-2605 GGUF pair), or
// any "owner/name" used as given. Names follow MinerU's per hub (OpenDataLab/... on ModelScope).
StatusOr<std::string> ResolveRepo(std::string_view choice, HubSource source);
// The Pro-2605 GGUF pair MinerU 4 deployments fetch for its llama.cpp engine: one owner and name on
// both hubs (MinerU's own source names no GGUF repository; see README).
inline constexpr const char* kGgufRepo = "jinzhenj/MinerU2.5-Pro-2605-1.2B-GGUF";
// ~/.cache/mineru-cpp/<name of repo> (default: the Pro-2605 folder). The CLI's ResolveModelDir adds
// --model and $MINERU_MODEL.
std::string DefaultModelDir(const std::string& repo = "");
// Written beside the weights after a complete download: {"repo", "source", "revision"}; the model
// loader names the checkpoint after "repo" (model/qwen2vl.cc reads the same file name).
inline constexpr const char* kDownloadRecord = "mineru-cpp-download.json";

struct DownloadOptions {
  HubSource source = HubSource::kHuggingFace;
  std::string repo;       // empty: DefaultRepo(source)
  std::string revision;   // empty: DefaultRevision(source)
  std::string endpoint;   // empty: $HF_ENDPOINT or $MODELSCOPE_ENDPOINT, else the public hub
  std::string model_dir;  // destination; empty: DefaultModelDir()
  bool force = false;     // fetch every file again even when a verified copy is present

  // Network behaviour. Defaults suit a real hub; tests shrink the retry delay.
  long connect_timeout_s = 10;    // DNS + TCP + TLS
  long low_speed_bytes_s = 1024;  // abort a transfer slower than this ...
  long low_speed_time_s = 30;     // ... for this long (it is then resumed, up to max_attempts)
  long api_timeout_s = 60;        // whole-request limit for the (small) file listing
  int max_attempts = 5;           // per file: first try + resumed retries after a dropped transfer
  int retry_delay_ms = 1000;      // wait before retry k is k * retry_delay_ms
};

// Where the job stands; passed to the progress callback (on the calling thread).
struct DownloadProgress {
  enum class Event {
    kListing,    // fetching the file list
    kStart,      // starting (or resuming) `file`
    kBytes,      // bytes of `file` arrived
    kVerifying,  // hashing `file` (an existing copy or a completed .part)
    kFileDone,   // `file` verified and in place
    kSkipped,    // `file` already present and verified
    kFinished,   // the job ended, successfully or not (see the returned Status)
  };
  Event event = Event::kListing;
  std::string file;    // path inside the repo
  int file_index = 0;  // 1-based among the files to fetch
  int file_count = 0;
  uint64_t file_bytes = 0;      // bytes of `file` on disk (including a resumed .part)
  uint64_t file_total = 0;      // 0 when unknown
  uint64_t bytes_done = 0;      // over all files of the job
  uint64_t bytes_total = 0;     // 0 when unknown
  uint64_t bytes_received = 0;  // over the network in this call (for a transfer rate)
};
using ProgressFn = std::function<void(const DownloadProgress&)>;

struct DownloadSummary {
  std::string model_dir;
  std::string endpoint;
  int files_fetched = 0;
  int files_skipped = 0;
  uint64_t bytes_fetched = 0;  // bytes received over the network in this call
};

// Fetches the checkpoint into options.model_dir (created if needed). OK when every needed file is
// in place and verified. Errors: kUnavailable (cannot reach the hub; the message says what to do),
// kNotFound (repo, revision or a needed file missing), kDataLoss (size/sha256 mismatch; the .part
// is deleted), kIoError (disk), kResourceExhausted (not enough free space), kDeadlineExceeded (the
// transfer kept failing; the .part is kept so that a rerun resumes).
Status DownloadModel(const DownloadOptions& options, const ProgressFn& progress = {},
                     DownloadSummary* summary = nullptr);

// True when `dir` holds what the engine needs: config.json, preprocessor_config.json,
// tokenizer.json, and model.safetensors or an index whose shards are all present. Cheap (no hashing).
// A GGUF folder (an LM .gguf and an mmproj-*.gguf) counts as complete too.
bool ModelLooksComplete(const std::string& dir);

// A progress callback that draws a one-line bar on stderr (bytes, rate, ETA) when stderr is a
// terminal and `quiet` is false; otherwise it does nothing.
ProgressFn MakeTerminalProgress(bool quiet);

// --- exposed for tests -------------------------------------------------------------------------

// Whether a repo file is one the engine needs (shards are chosen from the index, not by name).
bool IsWantedModelFile(std::string_view path);
// From a GGUF repository's file names: the language model (Q8_0 preferred, as MinerU 4 runs) and
// the vision projector (mmproj-*.gguf; Q8_0, then F16, then the first by name). Top-level files
// only. NotFound when either is missing or the LM choice is ambiguous.
StatusOr<std::pair<std::string, std::string>> PickGgufPair(const std::vector<std::string>& names);
// Percent-encodes everything but unreserved characters (and '/' when keep_slash).
std::string UrlEncode(std::string_view s, bool keep_slash);
// The endpoint the options resolve to (flag, environment, default), without a trailing '/'.
std::string ResolveEndpoint(const DownloadOptions& options);

}  // namespace mineru
