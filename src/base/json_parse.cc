#include "base/json_parse.h"

#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

namespace mineru {
namespace {

using Json = nlohmann::json;

// Builds the DOM from nlohmann's SAX events, charging each value to a budget and refusing
// containers past the depth limit. The first refusal is kept in status_ and ends the parse
// (every event returns false from then on).
class LimitedBuilder {
 public:
  LimitedBuilder(Json* root, const JsonLimits& limits) : root_(root), limits_(limits) {}

  bool null() { return Put(nullptr, 0); }
  bool boolean(bool v) { return Put(v, 0); }
  bool number_integer(Json::number_integer_t v) { return Put(v, 0); }
  bool number_unsigned(Json::number_unsigned_t v) { return Put(v, 0); }
  bool number_float(Json::number_float_t v, const std::string&) { return Put(v, 0); }
  bool string(std::string& v) {
    // nlohmann keeps every string value behind a pointer (the std::string object is on the
    // heap); characters past the small-string buffer take a second allocation.
    const size_t heap = json_cost::kString + (v.size() > 15 ? v.size() + json_cost::kString / 2 : 0);
    return Put(std::move(v), heap);
  }
  bool binary(Json::binary_t& v) {
    const size_t heap = v.size() + json_cost::kString;
    return Put(Json::binary(std::move(v)), heap);
  }
  bool key(std::string& k) {
    if (!Charge(json_cost::kMember + (k.size() > 15 ? k.size() : 0))) return false;
    key_ = std::move(k);
    return true;
  }
  bool start_object(size_t) { return Open(Json::object()); }
  bool start_array(size_t) { return Open(Json::array()); }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }
  bool parse_error(size_t position, const std::string&, const nlohmann::detail::exception& e) {
    if (status_.ok()) {
      status_ = InvalidArgumentError("not valid JSON at byte " + std::to_string(position) + ": " +
                                     ShortReason(e.what()));
    }
    return false;
  }

  const Status& status() const { return status_; }

 private:
  // nlohmann's messages start "[json.exception.parse_error.101] parse error at line 1, column 2: ".
  static std::string ShortReason(const std::string& what) {
    const size_t colon = what.find(": ");
    return colon == std::string::npos ? what : what.substr(colon + 2);
  }

  bool Charge(size_t bytes) {
    cost_ += bytes;
    if (cost_ <= limits_.max_cost_bytes) return true;
    status_ = ResourceExhaustedError("the JSON value would take more than " +
                                     std::to_string(limits_.max_cost_bytes >> 10) +
                                     " KiB of memory once parsed (too many values for its size)");
    return false;
  }

  // Stores v where the parse is (the root, the open array's end, the open object's key_). The
  // pointers on open_ stay valid: a container is not changed while a child of it is open.
  bool Put(Json v, size_t heap) {
    if (!Charge(heap + (open_.empty() || open_.back()->is_array() ? json_cost::kSlot : 0))) return false;
    Place(std::move(v));
    return true;
  }
  Json* Place(Json v) {
    if (open_.empty()) {
      *root_ = std::move(v);
      return root_;
    }
    Json& top = *open_.back();
    if (top.is_array()) {
      top.push_back(std::move(v));
      return &top.back();
    }
    Json& slot = top[key_];
    slot = std::move(v);
    return &slot;
  }
  bool Open(Json empty) {
    if (static_cast<int>(open_.size()) >= limits_.max_depth) {
      status_ = InvalidArgumentError("the JSON value is nested deeper than " +
                                     std::to_string(limits_.max_depth) + " levels");
      return false;
    }
    if (!Charge(json_cost::kContainer + (open_.empty() || open_.back()->is_array() ? json_cost::kSlot : 0))) {
      return false;
    }
    open_.push_back(Place(std::move(empty)));
    return true;
  }
  bool Close() {
    open_.pop_back();
    return true;
  }

  Json* root_;
  const JsonLimits& limits_;
  std::vector<Json*> open_;
  std::string key_;
  size_t cost_ = 0;
  Status status_;
};

}  // namespace

Status ParseJson(std::string_view text, const JsonLimits& limits, Json* out) {
  *out = nullptr;
  Json root;
  LimitedBuilder builder(&root, limits);
  const bool ok = Json::sax_parse(text.begin(), text.end(), &builder);
  if (!ok) {
    // A refusal from the builder, else nlohmann's own (kept by parse_error).
    return builder.status().ok() ? InvalidArgumentError("not valid JSON") : builder.status();
  }
  *out = std::move(root);
  return Status::Ok();
}

StatusOr<int64_t> JsonIntegerIn(const Json& v, int64_t lo, int64_t hi, std::string_view what) {
  const auto range = [&] {
    return InvalidArgumentError("'" + std::string(what) + "' must be an integer in [" + std::to_string(lo) +
                                ", " + std::to_string(hi) + "]");
  };
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (hi < 0 || u > static_cast<uint64_t>(hi) || static_cast<int64_t>(u) < lo) return range();
    return static_cast<int64_t>(u);
  }
  if (!v.is_number_integer()) return range();
  const int64_t i = v.get<int64_t>();
  if (i < lo || i > hi) return range();
  return i;
}

StatusOr<double> JsonNumberIn(const Json& v, double lo, double hi, std::string_view what) {
  if (v.is_number()) {
    const double d = v.get<double>();
    if (d >= lo && d <= hi) return d;
  }
  char range[80];
  std::snprintf(range, sizeof(range), "[%.17g, %.17g]", lo, hi);
  return InvalidArgumentError("'" + std::string(what) + "' must be a number in " + range);
}

}  // namespace mineru
