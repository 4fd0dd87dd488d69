// server/job_submit.h — turning an upload into a queued document job, shared by mineru-api 3.x's
// POST /tasks (document_api.cc) and MinerU 4's Tasks API (tasks_v4.cc): the queue bound, the
// storage quota charge, the page limit, the job's folder and the store insert, with idempotent
// retries. Not the routes' request formats nor the job runner (document_jobs.cc).
#pragma once

#include <functional>
#include <string>

#include <httplib.h>

#include "base/status.h"
#include "server/document_parse.h"
#include "server/state.h"

namespace mineru::server {

struct JobSubmission {
  std::string filename;                  // made safe with SafeName
  const std::string* content = nullptr;  // the upload's bytes (not null)
  ParseRequest request;                  // kept as the job's options
  std::string client_key;                // the caller-scoped Idempotency-Key ("" for none)
  // Optional: completes the request from the stored upload (at path) before the page limit is
  // checked, e.g. a page range that needs the document's page count. Its error refuses the job.
  std::function<Status(const std::string& path, ParseRequest* request)> prepare;
};

struct SubmittedJob {
  std::string id;
  std::string status;     // the job's status now ("queued" for a new one)
  bool replayed = false;  // an earlier job with the same client_key
};

// Queues the upload as a job. Errors by kind (HttpStatusFor): Busy (the queue holds
// --max-queued-jobs), StorageFull (--max-store-mb or the disk; 507), Unavailable (the store cannot
// be written; 503; the detail goes to the log, not the message), ResourceExhausted (over --max-pages;
// 413), InvalidArgument (not a document, or no page in range; 400).
StatusOr<SubmittedJob> SubmitJob(Server::State& st, const JobSubmission& s);

// A safe file name for an upload (no directories, no leading dots, at most 120 characters).
std::string SafeName(const std::string& name);

// The page limit of a parse of p's pages of the document at path (OptionsFor's input limits).
Status CheckPageLimit(const Server::State& st, const std::string& path, const ParseRequest& p);

// Who is asking, for scoping idempotency keys: the API key when the server has one, else the
// client's address (through a --trusted-proxy only). 32 hex digits.
std::string CallerScope(const httplib::Request& req, const ServerOptions& opt);

// A storage failure as the client sees it: logged with its detail, counted, and answered by kind
// with what failed (507 full, 503 otherwise).
Status StorageFailure(Server::State& st, const std::string& what, const Status& s);

}  // namespace mineru::server
