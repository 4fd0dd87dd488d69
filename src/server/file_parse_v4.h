// server/file_parse_v4.h — MinerU 4.1's synchronous `POST /v1/file_parse` (the route of
// `mineru-kit file-parse-server`): one multipart upload in, MinerU 4's result ZIP out
// (middle_json.json in Middle JSON 2.0, markdown.md, content_list.json, structured_content.json,
// images/), with 4.x's error envelope {"error": {"type", "code", "message", "param"}}.
//
// Fields, as the 4.1 wrapper takes them (docs/API.md): file (exactly one, non-empty, with its
// extension), tier, ocr_mode (auto|txt|ocr), page_range (4.x syntax: "1-5,8,r3-r1,all"), repeated
// output_formats (default|docx|html|latex; only "default", the ZIP, is served), wait_timeout
// (0..3600 s, default 3600), request_id (1-64 of [A-Za-z0-9_-]). A query string, an unknown field or
// a repeated scalar field is refused. Tiers: we run MinerU 4's "advanced" (the full two-step VLM
// extraction); an explicit other tier is refused with 400, never served as another.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <httplib.h>

#include "base/status.h"
#include "server/state.h"

namespace mineru::server {

// A refusal in MinerU 4's terms: HTTP status, 4.x error code, message, the field it is about.
struct RefusalV4 {
  int status = 400;
  std::string code = "invalid_request";
  std::string message;
  std::string param;
};

// POST /v1/file_parse, GET /v1/health (4.x shape) and GET /v1/tiers; the last two are public
// (no API key), as MinerU 4's discovery routes are.
void RegisterFileParseV4(httplib::Server& http, Server::State& st);

// 4.x page ranges over a document of num_pages pages: comma-separated items, each "all", "N",
// "N-M", "rN" (N-th page from the end, r1 = the last) or a range of those ("r3-r1"); 1-based,
// inclusive. Returns the 0-based pages in the order given, duplicates dropped; refuses an empty
// item, a page out of the document or a range that runs backwards (InvalidArgument), and a
// selection of more than max_pages pages (ResourceExhausted, before any item is expanded past it:
// the work is bounded by max_pages per item whatever the document claims).
StatusOr<std::vector<int>> PageRangeV4(const std::string& spec, int num_pages, int max_pages = 1 << 24);

// Whether spec is a 4.x page range in form alone (items "all", "N", "rN", "A-B" of those), without
// a document to check the pages against; at most 1000 characters.
bool PageRangeSyntaxV4(const std::string& spec);

// MinerU 4's error envelope: {"error": {"type", "code", "message", "param"}}; type from the status.
void SendErrorV4(httplib::Response& res, int status, const std::string& code, const std::string& message,
                 const std::string& param = "");

}  // namespace mineru::server
