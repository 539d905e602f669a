// tests/server/protocol_test.cc — `wort serve`'s text protocol against its exact replies:
// every command, noreply, error replies, binary values, the largest item, pipelining, a
// request split at every byte; the same scripts against Debian's memcached (byte for
// byte, when memcached is installed); pymemcache and memccapable as real clients.
#include <gtest/gtest.h>

#include <filesystem>
#include <iterator>

#include "server_harness.h"

namespace wort::test {
namespace {

class Serve : public ::testing::Test {
 protected:
  void SetUp() override {
    pool_ = temp_path(::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove(pool_);
    ASSERT_TRUE(srv_.start(pool_, {"-t", "2"})) << "wort serve did not start";
  }
  void TearDown() override {
    EXPECT_EQ(srv_.stop(), 0);
    std::filesystem::remove(pool_);
    std::filesystem::remove(pool_ + ".port");
  }
  std::string pool_;
  ServerProc srv_;
};

TEST_F(Serve, EveryClassicCommandAnswersAsMemcached) {
  Client c(srv_.port());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c.cmd("set k 7 0 3\r\nabc\r\n", "\r\n"), "STORED\r\n");
  EXPECT_EQ(c.cmd("get k\r\n", "END\r\n"), "VALUE k 7 3\r\nabc\r\nEND\r\n");
  EXPECT_EQ(c.cmd("add k 0 0 1\r\nx\r\n", "\r\n"), "NOT_STORED\r\n");
  EXPECT_EQ(c.cmd("replace k 8 0 2\r\nxy\r\n", "\r\n"), "STORED\r\n");
  EXPECT_EQ(c.cmd("append k 0 0 1\r\nz\r\n", "\r\n"), "STORED\r\n");
  EXPECT_EQ(c.cmd("prepend k 0 0 1\r\nw\r\n", "\r\n"), "STORED\r\n");
  EXPECT_EQ(c.cmd("get k\r\n", "END\r\n"), "VALUE k 8 4\r\nwxyz\r\nEND\r\n");
  const std::string g = c.cmd("gets k\r\n", "END\r\n");
  ASSERT_EQ(g.rfind("VALUE k 8 4 ", 0), 0u) << g;
  const std::string cas = g.substr(12, g.find("\r\n") - 12);
  EXPECT_EQ(c.cmd("cas k 1 0 1 " + cas + "1\r\nq\r\n", "\r\n"), "EXISTS\r\n");
  EXPECT_EQ(c.cmd("cas k 1 0 1 " + cas + "\r\nq\r\n", "\r\n"), "STORED\r\n");
  EXPECT_EQ(c.cmd("cas nokey 1 0 1 5\r\nq\r\n", "\r\n"), "NOT_FOUND\r\n");
  EXPECT_EQ(c.cmd("set n 0 0 2\r\n10\r\n", "\r\n"), "STORED\r\n");
  EXPECT_EQ(c.cmd("incr n 5\r\n", "\r\n"), "15\r\n");
  EXPECT_EQ(c.cmd("decr n 100\r\n", "\r\n"), "0\r\n");
  EXPECT_EQ(c.cmd("get n\r\n", "END\r\n"), "VALUE n 0 2\r\n0 \r\nEND\r\n");
  EXPECT_EQ(c.cmd("incr k 1\r\n", "\r\n"),
            "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
  EXPECT_EQ(c.cmd("incr n x\r\n", "\r\n"), "CLIENT_ERROR invalid numeric delta argument\r\n");
  EXPECT_EQ(c.cmd("incr none 1\r\n", "\r\n"), "NOT_FOUND\r\n");
  EXPECT_EQ(c.cmd("touch k 100\r\n", "\r\n"), "TOUCHED\r\n");
  EXPECT_EQ(c.cmd("touch none 100\r\n", "\r\n"), "NOT_FOUND\r\n");
  EXPECT_EQ(c.cmd("gat 100 k\r\n", "END\r\n"), "VALUE k 1 1\r\nq\r\nEND\r\n");
  EXPECT_EQ(c.cmd("gats 100 k\r\n", "END\r\n").rfind("VALUE k 1 1 ", 0), 0u);
  EXPECT_EQ(c.cmd("delete k\r\n", "\r\n"), "DELETED\r\n");
  EXPECT_EQ(c.cmd("delete k\r\n", "\r\n"), "NOT_FOUND\r\n");
  EXPECT_EQ(c.cmd("version\r\n", "\r\n").rfind("VERSION 1.6", 0), 0u);
  EXPECT_EQ(c.cmd("verbosity 1\r\n", "\r\n"), "OK\r\n");
  EXPECT_EQ(c.cmd("bogus\r\n", "\r\n"), "ERROR\r\n");
  EXPECT_NE(c.cmd("stats\r\n", "END\r\n").find("STAT curr_items 1\r\n"), std::string::npos);
  EXPECT_NE(c.cmd("stats settings\r\n", "END\r\n").find("STAT item_size_max 1048576\r\n"),
            std::string::npos);
  EXPECT_NE(c.cmd("stats items\r\n", "END\r\n").find(":number 1\r\n"), std::string::npos);
  EXPECT_EQ(c.cmd("flush_all\r\n", "\r\n"), "OK\r\n");
  EXPECT_EQ(c.cmd("get n\r\n", "END\r\n"), "END\r\n");
  EXPECT_EQ(c.cmd("quit\r\n", "<never>"), "");  // the server closes the connection
}

TEST_F(Serve, NoreplySuppressesEveryReplyButKeepsTheEffect) {
  Client c(srv_.port());
  c.send("set a 1 0 1 noreply\r\nx\r\nadd a 0 0 1 noreply\r\ny\r\nappend a 0 0 1 noreply\r\nz\r\n"
         "set n 0 0 1 noreply\r\n5\r\nincr n 2 noreply\r\ntouch a 0 noreply\r\n"
         "delete gone noreply\r\nflush_all 1000 noreply\r\nverbosity 1 noreply\r\n");
  EXPECT_EQ(c.cmd("get a n\r\n", "END\r\n"), "VALUE a 1 2\r\nxz\r\nVALUE n 0 1\r\n7\r\nEND\r\n");
}

TEST_F(Serve, ErrorRepliesAreMemcachedsStrings) {
  Client c(srv_.port());
  EXPECT_EQ(c.cmd("set a x 0 1\r\n", "\r\n"), "CLIENT_ERROR bad command line format\r\n");
  EXPECT_EQ(c.cmd("x\r\n", "\r\n"), "ERROR\r\n");  // the value line is read as a command
  EXPECT_EQ(c.cmd("set a 0 0 1\r\nxy\r\n", "ERROR\r\n"), "CLIENT_ERROR bad data chunk\r\nERROR\r\n");
  EXPECT_EQ(c.cmd("get " + std::string(251, 'k') + "\r\n", "\r\n"),
            "CLIENT_ERROR bad command line format\r\n");
  EXPECT_EQ(c.cmd("delete a 1\r\n", "\r\n"),
            "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n");
  EXPECT_EQ(c.cmd("touch a x\r\n", "\r\n"), "CLIENT_ERROR invalid exptime argument\r\n");
  EXPECT_EQ(c.cmd("flush_all x\r\n", "\r\n"), "CLIENT_ERROR invalid exptime argument\r\n");
  EXPECT_EQ(c.cmd("set big 0 0 2000000\r\n" + std::string(2000000, 'v') + "\r\nget big\r\n", "END\r\n"),
            "SERVER_ERROR object too large for cache\r\nEND\r\n");
  EXPECT_EQ(c.cmd("get\r\n", "\r\n"), "ERROR\r\n");
  EXPECT_EQ(c.cmd("\r\n", "\r\n"), "ERROR\r\n");
}

TEST_F(Serve, BinaryValuesAndTheLargestItem) {
  Client c(srv_.port());
  std::string v;
  for (int i = 0; i < 4096; ++i) v.push_back(static_cast<char>(i * 7 + (i >> 8)));
  v += "\r\nEND\r\n\r\n";
  EXPECT_EQ(c.cmd("set bin 0 0 " + std::to_string(v.size()) + "\r\n" + v + "\r\n", "\r\n"), "STORED\r\n");
  EXPECT_EQ(c.cmd("get bin\r\n", "\r\nEND\r\n"),
            "VALUE bin 0 " + std::to_string(v.size()) + "\r\n" + v + "\r\nEND\r\n");
  // -I 1m: key + value + the 32-byte item header.
  const std::string key = "largest";
  const std::size_t max_value = (1u << 20) - 32 - key.size();
  const std::string big(max_value, 'L');
  EXPECT_EQ(c.cmd("set " + key + " 0 0 " + std::to_string(max_value) + "\r\n" + big + "\r\n", "\r\n"),
            "STORED\r\n");
  const std::string got = c.cmd("get " + key + "\r\n", "\r\nEND\r\n");
  EXPECT_EQ(got.size(), max_value + 2 + 5 + ("VALUE largest 0 " + std::to_string(max_value) + "\r\n").size());
  EXPECT_EQ(c.cmd("set " + key + " 0 0 " + std::to_string(max_value + 1) + "\r\n" + big + "x\r\n", "\r\n"),
            "SERVER_ERROR object too large for cache\r\n");
  EXPECT_EQ(c.cmd("get " + key + "\r\n", "END\r\n"), "END\r\n");  // a failed set drops the old value
}

TEST_F(Serve, PipelinedRequests) {
  Client c(srv_.port());
  std::string req, want;
  for (int i = 0; i < 2000; ++i) {
    const std::string k = "p" + std::to_string(i), v = std::string(i % 50, 'a' + i % 26);
    req += "set " + k + " " + std::to_string(i) + " 0 " + std::to_string(v.size()) + "\r\n" + v + "\r\n";
    req += "get " + k + "\r\n";
    want += "STORED\r\nVALUE " + k + " " + std::to_string(i) + " " + std::to_string(v.size()) +
            "\r\n" + v + "\r\nEND\r\n";
  }
  c.send(req);
  EXPECT_EQ(c.read_until(want.substr(want.size() - 40)), want);
}

TEST_F(Serve, RequestSplitAtEveryByte) {
  const std::string script =
      "set split 3 0 10\r\n0123\r\n5678\r\nget split\r\nappend split 0 0 2 noreply\r\nab\r\n"
      "incr nokey 1\r\ngets nokey\r\ndelete split\r\nget split\r\n";
  const std::string want =
      "STORED\r\nVALUE split 3 10\r\n0123\r\n5678\r\nEND\r\nNOT_FOUND\r\nEND\r\nDELETED\r\nEND\r\n";
  for (std::size_t cut = 1; cut < script.size(); ++cut) {
    Client c(srv_.port());
    ASSERT_TRUE(c.ok());
    c.send(script.substr(0, cut));
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // a separate read
    c.send(script.substr(cut));
    ASSERT_EQ(c.read_until("DELETED\r\nEND\r\n"), want) << "split at byte " << cut;
  }
}

TEST_F(Serve, MetaCommandsEveryFlag) {
  Client c(srv_.port());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c.cmd("mn\r\n", "\r\n"), "MN\r\n");
  EXPECT_EQ(c.cmd("mg k v\r\n", "\r\n"), "EN\r\n");
  EXPECT_EQ(c.cmd("mg k v q k O7\r\nmn\r\n", "MN\r\n"), "MN\r\n");
  EXPECT_EQ(c.cmd("mg k k O7\r\n", "\r\n"), "EN kk O7\r\n");
  EXPECT_EQ(c.cmd("ms k 3 F9 T0 O1 k\r\nabc\r\n", "\r\n"), "HD O1 kk\r\n");
  EXPECT_EQ(c.cmd("mg k v f t s k h l O2\r\n", "abc\r\n"), "VA 3 f9 t-1 s3 kk h0 l0 O2\r\nabc\r\n");
  EXPECT_EQ(c.cmd("mg k h\r\n", "\r\n"), "HD h1\r\n");
  const std::string g = c.cmd("mg k c\r\n", "\r\n");
  ASSERT_EQ(g.rfind("HD c", 0), 0u) << g;
  const std::string cas = g.substr(4, g.size() - 6);
  EXPECT_EQ(c.cmd("ms k 1 C999999 q\r\nx\r\n", "\r\n"), "EX\r\n");
  EXPECT_EQ(c.cmd("ms k 1 C" + cas + " q\r\nx\r\nmn\r\n", "MN\r\n"), "MN\r\n");  // HD hidden
  EXPECT_EQ(c.cmd("ms k 1 ME\r\ny\r\n", "\r\n"), "NS\r\n");
  EXPECT_EQ(c.cmd("ms k 1 MA\r\ny\r\nms k 1 MP\r\nw\r\nmg k v\r\n", "wxy\r\n"),
            "HD\r\nHD\r\nVA 3\r\nwxy\r\n");
  EXPECT_EQ(c.cmd("ms none 1 MR\r\ny\r\n", "\r\n"), "NS\r\n");
  EXPECT_EQ(c.cmd("mg k T100 t\r\n", "\r\n"), "HD t100\r\n");
  // vivify: the first client wins (W), the next sees Z; R wins once the TTL is below it
  EXPECT_EQ(c.cmd("mg viv N30 s t\r\n", "\r\n"), "HD s0 t30 W\r\n");
  EXPECT_EQ(c.cmd("mg viv N30 s\r\n", "\r\n"), "HD s0 Z\r\n");
  EXPECT_EQ(c.cmd("mg k R200\r\n", "\r\n"), "HD W\r\n");
  EXPECT_EQ(c.cmd("mg k R200\r\n", "\r\n"), "HD Z\r\n");
  // invalidate: stale (X) with a new cas; the first reader wins the recache
  EXPECT_EQ(c.cmd("md k I T30\r\n", "\r\n"), "HD\r\n");
  EXPECT_EQ(c.cmd("mg k t v\r\n", "wxy\r\n"), "VA 3 t30 X W\r\nwxy\r\n");
  EXPECT_EQ(c.cmd("mg k\r\n", "\r\n"), "HD Z X\r\n");
  EXPECT_EQ(c.cmd("md k C1\r\n", "\r\n"), "EX\r\n");
  EXPECT_EQ(c.cmd("md k q\r\nmd k q\r\nmn\r\n", "MN\r\n"), "NF\r\nMN\r\n");
  // arithmetic
  EXPECT_EQ(c.cmd("ma n\r\n", "\r\n"), "NF\r\n");
  EXPECT_EQ(c.cmd("ma n N0 J10 v\r\n", "10\r\n"), "VA 2\r\n10\r\n");
  EXPECT_EQ(c.cmd("ma n D5 v\r\nma n MD D100 v\r\n", "0\r\n"), "VA 2\r\n15\r\nVA 1\r\n0\r\n");
  EXPECT_EQ(c.cmd("ma k\r\n", "\r\n"), "NF\r\n");
  EXPECT_EQ(c.cmd("ms s 1\r\nx\r\nma s\r\n", "value\r\n"),
            "HD\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
  // base64 keys, debug
  EXPECT_EQ(c.cmd("ms AAEC 1 b k\r\nz\r\n", "\r\n"), "HD kAAEC b\r\n");
  EXPECT_EQ(c.cmd("mg AAEC b v k\r\n", "z\r\n"), "VA 1 kAAEC b\r\nz\r\n");
  EXPECT_EQ(c.cmd("me AAEC b\r\n", "\r\n").rfind("ME AAEC exp=-1 la=0 cas=", 0), 0u);
  EXPECT_EQ(c.cmd("me none\r\n", "\r\n"), "EN\r\n");
  // the server's own block is no key, even base64-encoded ("\0wort-serve-meta")
  EXPECT_EQ(c.cmd("mg AHdvcnQtc2VydmUtbWV0YQ== b\r\n", "\r\n"), "CLIENT_ERROR error decoding key\r\n");
  // errors
  EXPECT_EQ(c.cmd("mg k x\r\n", "\r\n"), "CLIENT_ERROR invalid flag\r\n");
  EXPECT_EQ(c.cmd("mg k v v\r\n", "\r\n"), "CLIENT_ERROR duplicate flag\r\n");
  EXPECT_EQ(c.cmd("ms k 1 Mx\r\nx\r\n", "\r\n"), "CLIENT_ERROR invalid mode for ms M token\r\n");
  EXPECT_EQ(c.cmd("md k x\r\n", "\r\n"), "CLIENT_ERROR invalid or duplicate flag\r\n");
  EXPECT_EQ(c.cmd("ma k Mx\r\n", "\r\n"), "CLIENT_ERROR invalid mode for ma M token\r\n");
  EXPECT_EQ(c.cmd("wort_audit\r\n", "\r\n"), "OK\r\n");
}

TEST_F(Serve, MetaStateSurvivesSigkill) {
  {
    Client c(srv_.port());
    EXPECT_EQ(c.cmd("ms AAEC 1 b T1000\r\nz\r\nms s 2\r\nhi\r\nmd s I\r\n", "HD\r\nHD\r\nHD\r\n"),
              "HD\r\nHD\r\nHD\r\n");
  }
  srv_.kill9();
  ASSERT_TRUE(srv_.start(pool_, {"-t", "2"}));
  Client c(srv_.port());
  // stale and binary-key survive (in the item); the token-sent bit is DRAM: a new W
  EXPECT_EQ(c.cmd("mg s v\r\n", "hi\r\n"), "VA 2 X W\r\nhi\r\n");
  EXPECT_EQ(c.cmd("mg AAEC b k\r\n", "\r\n"), "HD kAAEC b\r\n");
  const std::string t = c.cmd("mg AAEC b t\r\n", "\r\n");
  EXPECT_TRUE(t == "HD t1000\r\n" || t == "HD t999\r\n") << t;
}

TEST_F(Serve, RepliesMatchDebianMemcachedByteForByte) {
  if (run("command -v memcached >/dev/null && test -x /usr/bin/python3") != 0)
    GTEST_SKIP() << "memcached or /usr/bin/python3 not installed (tools/install-deps.sh)";
  // memcached on a port of its own choosing is not possible; pick one near ours and retry.
  for (int attempt = 0; attempt < 5; ++attempt) {
    const int port = 20000 + (getpid() * 7 + attempt * 131) % 20000;
    const pid_t mc = fork();
    if (mc == 0) {
      const std::string p = std::to_string(port);
      execlp("memcached", "memcached", "-U", "0", "-l", "127.0.0.1", "-p", p.c_str(), "-u",
             "root", "-t", "2", static_cast<char*>(nullptr));
      _exit(127);
    }
    bool up = false;
    for (int i = 0; i < 200 && !up; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      up = Client(port).ok() && waitpid(mc, nullptr, WNOHANG) == 0;
    }
    if (!up) {
      kill(mc, SIGKILL);
      waitpid(mc, nullptr, 0);
      continue;
    }
    const int rc = run("/usr/bin/python3 " + source_dir() + "/tests/server/replies_vs_memcached.py " +
                       std::to_string(srv_.port()) + " " + std::to_string(port));
    kill(mc, SIGTERM);
    waitpid(mc, nullptr, 0);
    EXPECT_EQ(rc, 0) << "replies differ from memcached's (the script printed which)";
    return;
  }
  FAIL() << "could not start memcached on a free port";
}

TEST_F(Serve, PymemcacheClient) {
  if (run("/usr/bin/python3 -c 'import pymemcache' 2>/dev/null") != 0)
    GTEST_SKIP() << "python3-pymemcache not installed (tools/install-deps.sh)";
  EXPECT_EQ(run("/usr/bin/python3 " + source_dir() + "/tests/server/pymemcache_client.py " +
                std::to_string(srv_.port())),
            0);
}

TEST_F(Serve, Memccapable) {
  if (run("command -v memccapable >/dev/null") != 0)
    GTEST_SKIP() << "memccapable (libmemcached-tools) not installed";
  // -a: ASCII protocol only (no binary protocol here). Its output names each test.
  EXPECT_EQ(run("timeout 60 memccapable -a -h 127.0.0.1 -p " + std::to_string(srv_.port()) +
                " > " + pool_ + ".capable 2>&1"),
            0)
      << "see " << pool_ << ".capable";
}

// The binary protocol is not spoken: a request starting with its magic byte (0x80) is
// answered as memcached answers an unknown command, and the connection closes at once (a
// binary client fails fast instead of waiting for a newline that never comes).
TEST_F(Serve, BinaryRequestIsAnsweredErrorAndClosed) {
  Client c(srv_.port());
  std::string get_k(24, '\0');  // a binary GET of key "k": magic, opcode 0, key length 1
  get_k[0] = '\x80';
  get_k[3] = 1;
  get_k[11] = 1;
  get_k += "k";
  c.send(get_k);
  EXPECT_EQ(c.drain(300), "ERROR\r\n<closed>");
  Client d(srv_.port());  // a text client is unaffected
  EXPECT_EQ(d.cmd("version\r\n", "\r\n").rfind("VERSION ", 0), 0u);
}

// memcached reads a request line as a C string: it ends at the first NUL. So a key with a
// NUL inside is never stored (`set a\0b 0 0 1` has too few tokens: ERROR, then the data
// line is an unknown command: ERROR), and a get of it looks up the part before the NUL.
TEST_F(Serve, NulInARequestLineEndsItAsInMemcached) {
  Client c(srv_.port());
  c.send(std::string("set a\0b 0 0 1\r\nx\r\n", 18));
  EXPECT_EQ(c.read_lines(2), "ERROR\r\nERROR\r\n");
  EXPECT_EQ(c.cmd("set ab 0 0 1\r\ny\r\n", "\r\n"), "STORED\r\n");
  EXPECT_EQ(c.cmd(std::string("get a\0b\r\n", 9), "END\r\n"), "END\r\n");
  EXPECT_EQ(c.cmd(std::string("get ab\0zz\r\n", 11), "END\r\n"), "VALUE ab 0 1\r\ny\r\nEND\r\n");
  EXPECT_EQ(c.cmd(std::string("version\0 junk\r\n", 15), "\r\n").rfind("VERSION ", 0), 0u);
  EXPECT_NE(c.cmd("stats\r\n", "END\r\n").find("STAT curr_items 1\r\n"), std::string::npos);
}

// memcached closes the connection, without a reply, on a request line it does not know
// whose last token starts with "HTTP/" (a browser or an HTTP client tricked into talking to
// the cache). A known command keeps its usual reply; so does a line without "HTTP/".
TEST_F(Serve, HttpRequestLinesCloseTheConnection) {
  for (const char* req : {"GET / HTTP/1.0\r\n", "PUT /x HTTP/1.1\r\n", "DELETE HTTP/1.1\r\n",
                          "POST /a/b HTTP/1.1\r\nHost: x\r\n\r\n", "HEAD / HTTP/2\r\n",
                          "HTTP/1.1\r\n"}) {
    Client c(srv_.port());
    c.send(req);
    EXPECT_EQ(c.drain(300), "<closed>") << req;
  }
  Client c(srv_.port());
  EXPECT_EQ(c.cmd("GET /\r\n", "\r\n"), "ERROR\r\n");  // no HTTP/ token
  EXPECT_EQ(c.cmd("GET / http/1.0\r\n", "\r\n"), "ERROR\r\n");  // case matters
  EXPECT_EQ(c.cmd("gxx / HTTP/1.0\r\n", "\r\n"), "ERROR\r\n");  // memcached's 'g' branch
  EXPECT_EQ(c.cmd("delete HTTP/1.1\r\n", "\r\n"), "NOT_FOUND\r\n");
  EXPECT_EQ(c.cmd("get HTTP/1.1\r\n", "END\r\n"), "END\r\n");
  EXPECT_EQ(c.cmd("version\r\n", "\r\n").rfind("VERSION ", 0), 0u);
}

// A multi-get line may be long (memcached reads it whole, however long): 8,000 keys of 250
// bytes, 2 MB, arriving in pieces, get every value; a key over 250 bytes in it is memcached's
// CLIENT_ERROR, and the connection stays open.
TEST_F(Serve, LongMultiGetLineIsServed) {
  Client c(srv_.port());
  const std::string k(250, 'a');
  ASSERT_EQ(c.cmd("set " + k + " 3 0 2\r\nhi\r\n", "\r\n"), "STORED\r\n");
  std::string line = "get";
  for (int i = 0; i < 8000; ++i) line += " " + k;
  for (std::size_t off = 0; off < line.size(); off += 100000)
    ASSERT_TRUE(c.send(line.substr(off, 100000)));
  c.send("\r\n");
  const std::string one = "VALUE " + k + " 3 2\r\nhi\r\n";
  const std::string r = c.read_until("END\r\n");
  EXPECT_EQ(r.size(), one.size() * 8000 + 5);
  EXPECT_EQ(r.substr(0, one.size()), one);
  EXPECT_EQ(c.cmd("get b " + std::string(251, 'c') + "\r\n", "\r\n"),
            "CLIENT_ERROR bad command line format\r\n");
  EXPECT_EQ(c.cmd("version\r\n", "\r\n").rfind("VERSION ", 0), 0u);
}

// stats slabs / items / sizes / conns with the fields monitoring tools read, from the
// server's state: two items of 100 B values and one of 1000 B land in two size classes.
TEST_F(Serve, StatsSlabsItemsSizesConns) {
  Client c(srv_.port());
  const std::string v100(100, 'x'), v1000(1000, 'y');
  ASSERT_EQ(c.cmd("set a 0 0 100\r\n" + v100 + "\r\n", "\r\n"), "STORED\r\n");
  ASSERT_EQ(c.cmd("set b 0 0 100\r\n" + v100 + "\r\n", "\r\n"), "STORED\r\n");
  ASSERT_EQ(c.cmd("set c 0 0 1000\r\n" + v1000 + "\r\n", "\r\n"), "STORED\r\n");
  auto count = [](const std::string& s, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t p = 0; (p = s.find(what, p)) != std::string::npos; ++p) ++n;
    return n;
  };
  const std::string items = c.cmd("stats items\r\n", "END\r\n");
  EXPECT_EQ(count(items, ":number 2\r\n"), 1u) << items;
  EXPECT_EQ(count(items, ":number 1\r\n"), 1u) << items;
  EXPECT_EQ(count(items, ":mem_requested 133\r\n"), 0u) << items;   // per class, summed:
  EXPECT_EQ(count(items, ":mem_requested 266\r\n"), 1u) << items;   // 2 x (32 + 1 + 100)
  EXPECT_EQ(count(items, ":mem_requested 1033\r\n"), 1u) << items;  // 32 + 1 + 1000
  const std::string slabs = c.cmd("stats slabs\r\n", "END\r\n");
  EXPECT_EQ(count(slabs, ":chunk_size "), 2u) << slabs;
  EXPECT_EQ(count(slabs, ":used_chunks 2\r\n"), 1u) << slabs;
  EXPECT_NE(slabs.find("STAT active_slabs 2\r\n"), std::string::npos) << slabs;
  EXPECT_NE(slabs.find("STAT total_malloced "), std::string::npos) << slabs;
  EXPECT_EQ(c.cmd("stats sizes\r\n", "END\r\n"), "STAT 160 2\r\nSTAT 1056 1\r\nEND\r\n");
  Client d(srv_.port());
  ASSERT_EQ(d.cmd("version\r\n", "\r\n").rfind("VERSION ", 0), 0u);
  const std::string conns = c.cmd("stats conns\r\n", "END\r\n");
  EXPECT_EQ(count(conns, ":state conn_listening\r\n"), 1u) << conns;
  EXPECT_EQ(count(conns, ":listen_addr tcp:127.0.0.1:" + std::to_string(srv_.port()) + "\r\n"),
            2u) << conns;
  EXPECT_EQ(count(conns, ":secs_since_last_cmd "), 2u) << conns;
  const std::string st = c.cmd("stats\r\n", "END\r\n");
  for (const char* f : {"store_too_large", "store_no_memory", "accepting_conns",
                        "listen_disabled_num", "connection_structures"})
    EXPECT_NE(st.find(std::string("STAT ") + f + " "), std::string::npos) << f;
}

// -F: flush_all is refused as memcached refuses it (and still counted in cmd_flush); the
// items stay.
TEST(ServeFlags, DisableFlushAll) {
  const std::string pool = temp_path("flagsF");
  std::filesystem::remove(pool);
  ServerProc s;
  ASSERT_TRUE(s.start(pool, {"-t", "1", "-m", "8", "-F", "-U", "0", "-vv", "-c", "64",
                             "-B", "ascii"}));
  Client c(s.port());
  ASSERT_EQ(c.cmd("set k 0 0 1\r\nx\r\n", "\r\n"), "STORED\r\n");
  EXPECT_EQ(c.cmd("flush_all\r\n", "\r\n"), "CLIENT_ERROR flush_all not allowed\r\n");
  EXPECT_EQ(c.cmd("flush_all 10\r\n", "\r\n"), "CLIENT_ERROR flush_all not allowed\r\n");
  c.send("flush_all noreply\r\n");
  EXPECT_EQ(c.cmd("flush_all a b c\r\n", "\r\n"), "ERROR\r\n");
  EXPECT_EQ(c.cmd("get k\r\n", "END\r\n"), "VALUE k 0 1\r\nx\r\nEND\r\n");
  const std::string st = c.cmd("stats\r\n", "END\r\n");
  EXPECT_NE(st.find("STAT cmd_flush 3\r\n"), std::string::npos) << st;
  const std::string set = c.cmd("stats settings\r\n", "END\r\n");
  EXPECT_NE(set.find("STAT flush_enabled no\r\n"), std::string::npos) << set;
  EXPECT_NE(set.find("STAT verbosity 2\r\n"), std::string::npos) << set;
  EXPECT_EQ(s.stop(), 0);
  std::filesystem::remove(pool);
  std::filesystem::remove(pool + ".port");
}

// memcached's options serve does not take are refused by name, and an unknown option as
// unknown; neither creates a pool.
TEST(ServeFlags, UnsupportedFlagsAreRefusedByName) {
  const std::string pool = temp_path("flagsR");
  const std::string out = pool + ".out";
  std::filesystem::remove(pool);
  const std::string serve = wort_binary() + " serve --pool " + pool + " -p 0 ";
  auto slurp = [&] {
    std::ifstream in(out);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_NE(run(serve + "-o modern >" + out + " 2>&1"), 0);
  EXPECT_NE(slurp().find("-o (--extended)"), std::string::npos) << slurp();
  EXPECT_NE(slurp().find("not supported"), std::string::npos) << slurp();
  EXPECT_NE(run(serve + "-U 11211 >" + out + " 2>&1"), 0);
  EXPECT_NE(slurp().find("UDP"), std::string::npos) << slurp();
  EXPECT_NE(run(serve + "-B binary >" + out + " 2>&1"), 0);
  EXPECT_NE(slurp().find("-B: only 'ascii'"), std::string::npos) << slurp();
  EXPECT_NE(run(serve + "--bogus >" + out + " 2>&1"), 0);
  EXPECT_NE(slurp().find("unknown option '--bogus'"), std::string::npos) << slurp();
  EXPECT_FALSE(std::filesystem::exists(pool));
  std::filesystem::remove(out);
}

// -d detaches once the server answers (the parent exits 0) and -P names the server's pid,
// removed at a clean exit.
TEST(ServeFlags, DaemonAndPidfile) {
  const std::string pool = temp_path("flagsD");
  const std::string pidfile = pool + ".pid", portfile = pool + ".port";
  std::filesystem::remove(pool);
  std::filesystem::remove(portfile);
  ASSERT_EQ(run(wort_binary() + " serve --pool " + pool + " -p 0 -t 1 -m 8 -d -P " + pidfile +
                " --port-file " + portfile + " 2>/dev/null"),
            0);
  std::ifstream pf(pidfile);
  pid_t pid = 0;
  ASSERT_TRUE(pf >> pid) << "no pid file";
  struct Reap {  // never leave the detached server behind, whatever fails below
    pid_t pid;
    ~Reap() { ::kill(pid, SIGKILL); }
  } reap{pid};
  int port = 0;
  for (int i = 0; i < 500 && port == 0; ++i) {  // the port file follows the pid file
    std::ifstream in(portfile);
    if (!(in >> port)) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GT(port, 0);
  {
    Client c(port);
    EXPECT_EQ(c.cmd("set k 0 0 1\r\nx\r\n", "\r\n"), "STORED\r\n");
  }
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  bool gone = false;
  for (int i = 0; i < 1000 && !gone; ++i) {
    gone = ::kill(pid, 0) != 0;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(gone);
  EXPECT_FALSE(std::filesystem::exists(pidfile));
  // A detached start that fails says so with its exit status.
  EXPECT_NE(run(wort_binary() + " serve --pool " + pool + " -p 0 -l 1.2.3.4 -d 2>/dev/null"), 0);
  std::filesystem::remove(pool);
  std::filesystem::remove(portfile);
}

}  // namespace
}  // namespace wort::test
