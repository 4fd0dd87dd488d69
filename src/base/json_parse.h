// base/json_parse.h — the one way untrusted JSON is read (requests, replay files, model configs,
// tokenizer files, job records): nesting and memory bounded before anything is built, numbers
// checked against their range before they are narrowed.
//
// nlohmann's parser itself does not recurse, but a value nested 150,000 deep is walked
// recursively by everything that reads it afterwards (dump(), comparisons, our own walks), and a
// body of `[{},{},…]` costs ~30x its size once parsed. ParseJson refuses both while it reads: a
// container opened past max_depth, or an estimate of the parsed value's heap bytes over
// max_cost_bytes, ends the parse at once with an error and frees what was built.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace mineru {

struct JsonLimits {
  // Containers (arrays, objects) nested deeper than this are refused: the root container is
  // depth 1. Every JSON this project reads is under 16 deep; 64 leaves room for schemas.
  int max_depth = 64;
  // Refused when the estimated heap bytes of the parsed value (JsonCost below) pass this. The
  // default bounds nothing; callers that parse what a client sent pass a budget tied to the body.
  size_t max_cost_bytes = std::numeric_limits<size_t>::max();
};

// A parsed request may cost at most this many bytes of heap per body byte, plus kJsonCostFloor:
// a value of small numbers, short strings or empty containers costs up to ~80 bytes for each 2-4
// bytes of text (refused once the body is large), a request of long strings about one byte per byte.
inline constexpr size_t kJsonCostPerByte = 8;
inline constexpr size_t kJsonCostFloor = size_t(1) << 20;
// The budget for a body of `bytes` bytes sent by a client.
inline JsonLimits RequestJsonLimits(size_t bytes) {
  JsonLimits l;
  l.max_cost_bytes = bytes * kJsonCostPerByte + kJsonCostFloor;
  return l;
}

// Parses text into *out (replaced). Errors: InvalidArgument for text that is not one JSON value
// (with the byte offset) or nested past limits.max_depth; ResourceExhausted when the value would
// cost more than limits.max_cost_bytes. On error *out is null. Strings are moved out of the lexer
// rather than copied. Duplicate keys: the last wins, as with nlohmann::json::parse.
Status ParseJson(std::string_view text, const JsonLimits& limits, nlohmann::json* out);

// The estimate ParseJson charges for one value of each kind (bytes of heap, malloc's overhead
// included; the slot a value takes in its parent is charged to the value).
namespace json_cost {
inline constexpr size_t kSlot = 32;       // a value in an array (16 bytes, doubled for vector growth)
inline constexpr size_t kMember = 112;    // an object member: the map node, its key string, the value
inline constexpr size_t kContainer = 64;  // the std::vector / std::map of an array or object
inline constexpr size_t kString = 48;     // a string value's std::string object (on the heap)
}  // namespace json_cost

// Reads an integer that must be in [lo, hi]: a JSON integer, signed or unsigned, compared before
// any narrowing (2^64-1 is not -1). Floats, including 1.0, are not integers. `what` names the
// field in the error.
StatusOr<int64_t> JsonIntegerIn(const nlohmann::json& v, int64_t lo, int64_t hi, std::string_view what);
// Reads a number in [lo, hi] (integer or float); NaN never passes.
StatusOr<double> JsonNumberIn(const nlohmann::json& v, double lo, double hi, std::string_view what);

}  // namespace mineru
