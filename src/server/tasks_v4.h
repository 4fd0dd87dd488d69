// server/tasks_v4.h — MinerU 4.1's Tasks API on `serve` (docs/API.md "MinerU 4 Tasks API"):
//   POST /v1/tasks                                  202 CreateTaskResponse (application/json only)
//   PUT  /v1/tasks/{task_id}/uploads/{file_id}      200 UploadFileResponse (the file's bytes)
//   GET  /v1/tasks/{task_id}                        200 TaskDetailResponse
//   POST /v1/tasks/{task_id}/cancel                 200 CancelTaskResponse (no body)
//   GET  /v1/tasks/{task_id}/files/{file_id}/result the file's MinerU 4 ZIP (its result_url)
//   DELETE /v1/tasks/{task_id}                      405
// Each file becomes one document job (job_store.h) parsed with MinerU 4's files (pipeline version
// "4"); the task record (tasks_v4_registry.h) says which. Errors in 4.x's envelope (SendErrorV4).
// The upload link is a capability: its task and file ids are 128-bit random, and it is accepted
// without the API key (as an object-storage upload URL is), once, before it expires.
#pragma once

#include <string>

#include <httplib.h>

#include "server/state.h"

namespace mineru::server {

void RegisterTasksV4(httplib::Server& http, Server::State& st);

// Whether path (canonical, see CanonicalApiPath) is a task upload link: PUT there needs no API key.
bool IsTaskUploadPathV4(const std::string& path);

}  // namespace mineru::server
