#include "net/http.h"

#include <gtest/gtest.h>

#include <thread>

#include "net/raw_server.h"
#include "testing/test_util.h"

namespace hone::net {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<RawServer> Serve(RawServer::Handler h) {
  auto s = RawServer::Start(std::move(h));
  EXPECT_TRUE(s);
  return std::move(*s);
}

TEST(UrlTest, Parses) {
  auto u = ParseUrl("http://127.0.0.1:8080/v1/");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->port, 8080);
  EXPECT_EQ(u->path, "/v1");
  EXPECT_EQ(ParseUrl("http://localhost")->port, 80);
  EXPECT_FALSE(ParseUrl("https://x"));
  EXPECT_FALSE(ParseUrl("http://x:99999"));
  EXPECT_FALSE(ParseUrl("http://:80"));
}

TEST(HttpTest, ContentLengthBodyAndRequestEcho) {
  auto server = Serve([](const RawRequest& req, RawWriter& w) {
    std::string body = req.method + " " + req.path + " " + req.body;
    w.Write("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\nX-A: b\r\n\r\n" + body);
  });
  auto r = PostJson("127.0.0.1", server->port(), "/v1/completions", "{\"x\":1}", 2s);
  ASSERT_OK(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "POST /v1/completions {\"x\":1}");
  EXPECT_EQ(r->Header("x-a"), "b");
}

TEST(HttpTest, ChunkedBodySplitAcrossWrites) {
  auto server = Serve([](const RawRequest&, RawWriter& w) {
    w.Write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    w.Write("5\r\nhel");
    std::this_thread::sleep_for(10ms);
    w.Write("lo\r\n6;ext=1\r\n world\r");
    std::this_thread::sleep_for(10ms);
    w.Write("\n0\r\n\r\n");
  });
  auto r = Get("127.0.0.1", server->port(), "/", 2s);
  ASSERT_OK(r);
  EXPECT_EQ(r->body, "hello world");
}

TEST(HttpTest, BodyUntilClose) {
  auto server = Serve([](const RawRequest&, RawWriter& w) { w.Write("HTTP/1.0 200 OK\r\n\r\nall of it"); });
  auto r = Get("127.0.0.1", server->port(), "/", 2s);
  ASSERT_OK(r);
  EXPECT_EQ(r->body, "all of it");
}

TEST(HttpTest, NonSuccessStatusIsAResponseNotAnError) {
  auto server = Serve([](const RawRequest&, RawWriter& w) {
    w.Write("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 7\r\n\r\nloading");
  });
  auto r = Get("127.0.0.1", server->port(), "/health", 2s);
  ASSERT_OK(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->body, "loading");
}

TEST(HttpTest, ConnectionRefused) {
  auto port = FreeLoopbackPort();
  ASSERT_OK(port);
  auto r = Get("127.0.0.1", *port, "/", 2s);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(r.error().Get("transport_error"), "connection_refused");
}

TEST(HttpTest, ResetMidResponse) {
  auto server = Serve([](const RawRequest&, RawWriter& w) {
    w.Write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial");
    std::this_thread::sleep_for(20ms);
    w.Reset();
  });
  auto r = Get("127.0.0.1", server->port(), "/", 2s);
  ASSERT_FALSE(r);
  auto kind = r.error().Get("transport_error");
  EXPECT_TRUE(kind == "connection_reset" || kind == "truncated") << kind;
}

TEST(HttpTest, TruncatedChunkedBody) {
  auto server = Serve([](const RawRequest&, RawWriter& w) {
    w.Write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel");
  });
  auto r = Get("127.0.0.1", server->port(), "/", 2s);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().Get("transport_error"), "truncated");
  EXPECT_EQ(r.error().code, ErrorCode::kDataLoss);
}

TEST(HttpTest, MalformedStatusLine) {
  auto server = Serve([](const RawRequest&, RawWriter& w) { w.Write("SMTP ready\r\n\r\n"); });
  auto r = Get("127.0.0.1", server->port(), "/", 2s);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().Get("transport_error"), "bad_response");
}

TEST(HttpTest, StalledStreamHitsIdleTimeout) {
  auto server = Serve([](const RawRequest&, RawWriter& w) {
    w.Write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    w.WriteChunk("data: 1\n\n");
    std::this_thread::sleep_for(1500ms);  // stall
  });
  auto loop = HttpLoop::Create();
  ASSERT_OK(loop);
  struct H : ResponseHandler {
    std::string body;
    TransportError err = TransportError::kInternal;
    bool done = false;
    void OnBody(std::string_view d, int64_t) override { body.append(d); }
    void OnDone(TransportError e, std::string_view, int64_t) override {
      err = e;
      done = true;
    }
  } h;
  (*loop)->Submit({.method = "GET", .port = server->port(), .path = "/"}, &h, RequestLimits{200ms, 10s});
  while (!h.done) (*loop)->RunOnce(20);
  EXPECT_EQ(h.err, TransportError::kStalled);
  EXPECT_EQ(h.body, "data: 1\n\n");
}

TEST(HttpTest, ManyConcurrentStreamsOnOneLoop) {
  auto server = Serve([](const RawRequest& req, RawWriter& w) {
    w.Write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    for (int i = 0; i < 20; ++i) w.WriteChunk(req.path.substr(1) + ";");
    w.EndChunks();
  });
  auto loop = HttpLoop::Create();
  ASSERT_OK(loop);
  struct H : ResponseHandler {
    std::string body;
    int64_t last_ns = 0;
    bool ordered = true;
    TransportError err = TransportError::kInternal;
    void OnBody(std::string_view d, int64_t t) override {
      body.append(d);
      ordered = ordered && t >= last_ns;
      last_ns = t;
    }
    void OnDone(TransportError e, std::string_view, int64_t) override { err = e; }
  };
  std::vector<H> handlers(64);
  for (size_t i = 0; i < handlers.size(); ++i) {
    (*loop)->Submit({.port = server->port(), .path = "/" + std::to_string(i)}, &handlers[i], {});
  }
  (*loop)->RunUntilIdle(HttpLoop::NowNs() + 10'000'000'000LL);
  for (size_t i = 0; i < handlers.size(); ++i) {
    EXPECT_EQ(handlers[i].err, TransportError::kNone);
    std::string expect;
    for (int k = 0; k < 20; ++k) expect += std::to_string(i) + ";";
    EXPECT_EQ(handlers[i].body, expect);
    EXPECT_TRUE(handlers[i].ordered);
  }
}

}  // namespace
}  // namespace hone::net
