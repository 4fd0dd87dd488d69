// server/tasks_v4_internal.h — what the Tasks API's two files share (private to them): links,
// queuing a file's bytes as a job, and the handlers of tasks_v4_files.cc (uploads, url sources,
// results). tasks_v4.cc holds creation, status, cancel and the routes.
#pragma once

#include <optional>
#include <string>

#include <httplib.h>

#include "server/file_parse_v4.h"
#include "server/job_submit.h"
#include "server/state.h"
#include "server/tasks_v4_registry.h"

namespace mineru::server {

// "http(s)://host[:port]" the client reached (Host; X-Forwarded-Proto "https" from a proxy).
std::string BaseUrlV4(const httplib::Request& req, const ServerOptions& opt);
// The upload link of a file waiting for its bytes: {url, method, headers, expires_at}.
Json UploadLinkV4(const std::string& base, const TaskV4& t, const TaskFileV4& f, double ttl_s);
std::string ResultUrlV4(const std::string& base, const TaskV4& t, const TaskFileV4& f);
// RFC 3339 UTC, whole seconds.
std::string TimeV4(double seconds_since_epoch);

// The file's job as the store has it (nullopt: none, gone, or the store failed: then *error, when
// given and still ok, is set to the store's failure).
std::optional<Job> JobOfV4(Server::State& st, const TaskFileV4& f, Status* error = nullptr);
std::string FileStatusNowV4(Server::State& st, const TaskV4& t, const TaskFileV4& f,
                            const std::optional<Job>& job);

// Queues bytes as file f's job of task t, and records the outcome in the task: submitted (with
// the job and the bytes' sha256), failed (the bytes or the page range are refused: any 4xx but
// 429), or waiting-file again (the server's trouble: the client may send them again).
StatusOr<SubmittedJob> SubmitTaskFileV4(Server::State& st, const TaskV4& t, const TaskFileV4& f,
                                        const std::string& bytes);

// At creation: files whose sha256 the server already holds, and url sources (fetched now, all
// together under --remote-image-timeout-s), are queued without an upload. t is updated.
void SubmitKnownSourcesV4(Server::State& st, TaskV4* t);

// PUT /v1/tasks/{task_id}/uploads/{file_id}
void HandleUploadV4(Server::State& st, const httplib::Request& req, httplib::Response& res,
                    const httplib::ContentReader& reader);
// GET /v1/tasks/{task_id}/files/{file_id}/result
void HandleResultV4(Server::State& st, const httplib::Request& req, httplib::Response& res);

// A failed Status in 4.x's envelope: its HTTP status, a code for it, param.
void SendStatusV4(httplib::Response& res, const Status& s, const std::string& param = "");
inline void SendRefusalV4(httplib::Response& res, const RefusalV4& r) {
  SendErrorV4(res, r.status, r.code, r.message, r.param);
}

}  // namespace mineru::server
