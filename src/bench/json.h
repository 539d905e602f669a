// bench/json.h — a small JSON writer (for reports) and reader (for tests and for merging
// a callgrind child's results). Numbers that are NaN or infinite are written as null.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "wort/status.h"

namespace wort::bench {

//! Streaming writer with automatic commas. Usage: w.begin_object(); w.key("a"); w.value(1);
class JsonWriter {
 public:
  void begin_object();
  void end_object();
  void begin_array();
  void end_array();
  void key(std::string_view k);
  void value(std::string_view s);
  void value(const char* s) { value(std::string_view(s)); }
  void value(const std::string& s) { value(std::string_view(s)); }
  void value(double d);
  void value(std::uint64_t u);
  void value(std::int64_t i);
  void value(unsigned u) { value(static_cast<std::uint64_t>(u)); }
  void value(int i) { value(static_cast<std::int64_t>(i)); }
  void value(bool b);
  void null();
  //! key + value in one call.
  template <class T>
  void field(std::string_view k, const T& v) {
    key(k);
    value(v);
  }
  const std::string& str() const noexcept { return out_; }

 private:
  void separate();
  void indent();
  std::string out_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
};

//! Escapes a string for JSON (without the quotes).
std::string json_escape(std::string_view s);

//! A parsed JSON value (a plain tagged struct: small and warning-free).
struct JsonValue {
  enum class Type : std::uint8_t { null, boolean, number, string, array, object };
  using Object = std::map<std::string, JsonValue, std::less<>>;
  using Array = std::vector<JsonValue>;
  Type type = Type::null;
  bool b = false;
  double n = 0;
  std::string s;
  Array a;
  Object o;

  bool is_null() const { return type == Type::null; }
  bool is_number() const { return type == Type::number; }
  bool is_string() const { return type == Type::string; }
  bool is_array() const { return type == Type::array; }
  bool is_object() const { return type == Type::object; }
  double num() const { return n; }
  const std::string& str() const { return s; }
  const Array& arr() const { return a; }
  const Object& obj() const { return o; }
  //! Member `k` of an object, or nullptr.
  const JsonValue* get(std::string_view k) const;
};

//! Parses a whole document.
Result<JsonValue> parse_json(std::string_view text);

}  // namespace wort::bench
