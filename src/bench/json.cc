#include "bench/json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace wort::bench {

std::string json_escape(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      case '\r': o += "\\r"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          o += buf;
        } else {
          o += ch;
        }
    }
  }
  return o;
}

void JsonWriter::indent() {
  out_ += '\n';
  out_.append(first_.size() * 2, ' ');
}

void JsonWriter::separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_ += ',';
    first_.back() = false;
    indent();
  }
}

void JsonWriter::begin_object() {
  separate();
  out_ += '{';
  first_.push_back(true);
}

void JsonWriter::end_object() {
  const bool empty = first_.back();
  first_.pop_back();
  if (!empty) indent();
  out_ += '}';
}

void JsonWriter::begin_array() {
  separate();
  out_ += '[';
  first_.push_back(true);
}

void JsonWriter::end_array() {
  const bool empty = first_.back();
  first_.pop_back();
  if (!empty) indent();
  out_ += ']';
}

void JsonWriter::key(std::string_view k) {
  separate();
  out_ += '"';
  out_ += json_escape(k);
  out_ += "\": ";
  after_key_ = true;
}

void JsonWriter::value(std::string_view s) {
  separate();
  out_ += '"';
  out_ += json_escape(s);
  out_ += '"';
}

void JsonWriter::value(double d) {
  separate();
  if (!std::isfinite(d)) {
    out_ += "null";
    return;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", d);
  out_ += buf;
}

void JsonWriter::value(std::uint64_t u) {
  separate();
  out_ += std::to_string(u);
}

void JsonWriter::value(std::int64_t i) {
  separate();
  out_ += std::to_string(i);
}

void JsonWriter::value(bool b) {
  separate();
  out_ += b ? "true" : "false";
}

void JsonWriter::null() {
  separate();
  out_ += "null";
}

const JsonValue* JsonValue::get(std::string_view k) const {
  if (!is_object()) return nullptr;
  auto it = obj().find(k);
  return it == obj().end() ? nullptr : &it->second;
}

namespace {

// Recursive-descent parser over a string_view; `pos` advances.
class Parser {
 public:
  explicit Parser(std::string_view t) : t_(t) {}
  Result<JsonValue> document() {
    JsonValue v;
    if (!value(v, 0)) return fail();
    ws();
    if (pos_ != t_.size()) return Error{Status::corrupt, "trailing characters at " + std::to_string(pos_)};
    return v;
  }

 private:
  Error fail() const { return Error{Status::corrupt, "JSON syntax error at offset " + std::to_string(pos_)}; }
  void ws() {
    while (pos_ < t_.size() && (t_[pos_] == ' ' || t_[pos_] == '\n' || t_[pos_] == '\t' || t_[pos_] == '\r')) ++pos_;
  }
  bool lit(std::string_view s) {
    if (t_.substr(pos_, s.size()) != s) return false;
    pos_ += s.size();
    return true;
  }
  bool value(JsonValue& out, int depth) {
    if (depth > 200) return false;
    ws();
    if (pos_ >= t_.size()) return false;
    const char c = t_[pos_];
    if (c == '{') return object(out, depth);
    if (c == '[') return array(out, depth);
    if (c == '"') {
      std::string s;
      if (!string(s)) return false;
      out.type = JsonValue::Type::string;
      out.s = std::move(s);
      return true;
    }
    if (lit("null")) return out.type = JsonValue::Type::null, true;
    if (lit("true")) return out.type = JsonValue::Type::boolean, out.b = true, true;
    if (lit("false")) return out.type = JsonValue::Type::boolean, out.b = false, true;
    return number(out);
  }
  bool number(JsonValue& out) {
    const std::string rest(t_.substr(pos_, 64));
    char* end = nullptr;
    const double d = std::strtod(rest.c_str(), &end);
    if (end == rest.c_str()) return false;
    pos_ += static_cast<std::size_t>(end - rest.c_str());
    out.type = JsonValue::Type::number;
    out.n = d;
    return true;
  }
  bool string(std::string& s) {
    ++pos_;  // opening quote
    while (pos_ < t_.size() && t_[pos_] != '"') {
      char c = t_[pos_++];
      if (c != '\\') {
        s += c;
        continue;
      }
      if (pos_ >= t_.size()) return false;
      c = t_[pos_++];
      switch (c) {
        case 'n': s += '\n'; break;
        case 't': s += '\t'; break;
        case 'r': s += '\r'; break;
        case 'b': s += '\b'; break;
        case 'f': s += '\f'; break;
        case 'u': {
          if (pos_ + 4 > t_.size()) return false;
          const unsigned cp = static_cast<unsigned>(std::strtoul(std::string(t_.substr(pos_, 4)).c_str(), nullptr, 16));
          pos_ += 4;
          if (cp < 0x80) s += static_cast<char>(cp);
          else if (cp < 0x800) s += static_cast<char>(0xc0 | (cp >> 6)), s += static_cast<char>(0x80 | (cp & 0x3f));
          else s += static_cast<char>(0xe0 | (cp >> 12)), s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f)),
               s += static_cast<char>(0x80 | (cp & 0x3f));
          break;
        }
        default: s += c;
      }
    }
    if (pos_ >= t_.size()) return false;
    ++pos_;
    return true;
  }
  bool array(JsonValue& out, int depth) {
    ++pos_;
    out.type = JsonValue::Type::array;
    JsonValue::Array& a = out.a;
    ws();
    if (pos_ < t_.size() && t_[pos_] == ']') return ++pos_, true;
    for (;;) {
      JsonValue e;
      if (!value(e, depth + 1)) return false;
      a.push_back(std::move(e));
      ws();
      if (pos_ < t_.size() && t_[pos_] == ',') { ++pos_; continue; }
      if (pos_ < t_.size() && t_[pos_] == ']') { ++pos_; break; }
      return false;
    }
    return true;
  }
  bool object(JsonValue& out, int depth) {
    ++pos_;
    out.type = JsonValue::Type::object;
    JsonValue::Object& o = out.o;
    ws();
    if (pos_ < t_.size() && t_[pos_] == '}') return ++pos_, true;
    for (;;) {
      ws();
      std::string k;
      if (pos_ >= t_.size() || t_[pos_] != '"' || !string(k)) return false;
      ws();
      if (pos_ >= t_.size() || t_[pos_] != ':') return false;
      ++pos_;
      JsonValue e;
      if (!value(e, depth + 1)) return false;
      o.emplace(std::move(k), std::move(e));
      ws();
      if (pos_ < t_.size() && t_[pos_] == ',') { ++pos_; continue; }
      if (pos_ < t_.size() && t_[pos_] == '}') { ++pos_; break; }
      return false;
    }
    return true;
  }
  std::string_view t_;
  std::size_t pos_ = 0;
};

}  // namespace

Result<JsonValue> parse_json(std::string_view text) { return Parser(text).document(); }

}  // namespace wort::bench
