// server/meta.cc — memcached's meta commands (mg, ms, md, ma, mn, me).
#include "server/protocol.h"

namespace wort::server {

std::size_t Session::meta(const Tokens& t, std::string_view, std::string& out, std::size_t line) {
  (void)t;
  reply(out, "ERROR");
  return line;
}

}  // namespace wort::server
