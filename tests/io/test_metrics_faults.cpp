// The /metrics endpoint against misbehaving clients (include/yolo11/io/metrics_server.h, file comment): trickling
// ("slowloris") and silent clients neither starve a normal scrape nor add threads, and are closed at their deadline;
// connections past the cap close the oldest waiting one; descriptors do not leak; a client that does not read its
// responses is cut off; malformed requests get 4xx; keep-alive and pipelined scrapes are answered, without
// delayed-ACK stalls, and promtool accepts each body; the default bind is loopback; render() holds the registry lock
// for microseconds. Each test runs with a 1 s request timeout so that it ends in a few seconds.
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "golden.h"
#include "http_test_client.h"
#include "process.h"
#include "yolo11/config/train_config.h"
#include "yolo11/io/metrics_server.h"

using namespace yolo11;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using test::connect_to;
using test::read_until_close;
using test::send_all;
using test::status_of;

namespace {

io::MetricsServer::Limits fast_limits() {
  io::MetricsServer::Limits l;
  l.request_timeout = 1000ms;
  l.io_timeout = 500ms;
  return l;
}

/// The families and label sets a training run serves (src/engine/loggers.cpp, MetricsLogger), with `stages` timed
/// stages; values include the special ones the exposition format spells out (NaN, +Inf).
std::shared_ptr<io::MetricsRegistry> training_like_registry(int stages = 8) {
  using T = io::MetricsRegistry::Type;
  auto reg = std::make_shared<io::MetricsRegistry>();
  const char* gauges[] = {"yolo11_up", "yolo11_world_size", "yolo11_epoch", "yolo11_epochs", "yolo11_step_seconds",
                          "yolo11_images_per_second", "yolo11_data_wait_ratio", "yolo11_mfu_ratio"};
  for (const char* g : gauges) reg->declare(g, T::gauge, "a gauge of the run");
  for (const char* c : {"yolo11_steps_total", "yolo11_images_total", "yolo11_stage_seconds_total"})
    reg->declare(c, T::counter, "a counter of the run");
  for (const char* g : {"yolo11_stage_share", "yolo11_train_loss", "yolo11_val_loss", "yolo11_val_metric", "yolo11_lr"})
    reg->declare(g, T::gauge, "a labelled gauge of the run");
  const std::string r = "rank=\"0\"";
  double v = 0.125;
  for (const char* g : gauges) reg->set(g, r, v *= 1.7);
  reg->add("yolo11_steps_total", r, 1234);
  reg->add("yolo11_images_total", r, 19744);
  for (int s = 0; s < stages; ++s) {
    const std::string l = "stage=\"stage" + std::to_string(s) + "\"," + r;
    reg->add("yolo11_stage_seconds_total", l, 12.5 + s);
    reg->set("yolo11_stage_share", l, 0.1 * s);
  }
  for (const char* k : {"box", "cls", "dfl"}) {
    reg->set("yolo11_train_loss", std::string("loss=\"") + k + "\"," + r, 1.25);
    reg->set("yolo11_val_loss", std::string("loss=\"") + k + "\"," + r, std::nan(""));
  }
  for (const char* m : {"precision", "recall", "mAP50", "mAP50-95"})
    reg->set("yolo11_val_metric", std::string("metric=\"") + m + "\"," + r, 0.5);
  for (int g = 0; g < 3; ++g)
    reg->set("yolo11_lr", "group=\"" + std::to_string(g) + "\"," + r, g == 2 ? INFINITY : 0.01);
  return reg;
}

size_t entries(const char* dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

/// Seconds until GET /metrics answered 200 (−1 for another answer, or none within 3 s).
double timed_scrape(int port, std::string* body = nullptr) {
  const auto t0 = Clock::now();
  auto [status, text] = test::http_get(port, "/metrics", 3000ms);
  if (body) *body = text;
  return status == 200 ? std::chrono::duration<double>(Clock::now() - t0).count() : -1;
}

/// Reads one response (head, then Content-Length bytes of body) within `timeout`; "" when none came.
std::string read_response(int fd, std::chrono::milliseconds timeout) {
  const auto end = Clock::now() + timeout;
  std::string out;
  size_t want = std::string::npos;
  while (out.size() < want) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count();
    pollfd p{fd, POLLIN, 0};
    if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) return "";
    char c;
    const ssize_t n = ::recv(fd, &c, 1, 0);  // byte by byte: the next response stays in the socket
    if (n <= 0) return "";
    out += c;
    if (want == std::string::npos && out.size() >= 4 && out.compare(out.size() - 4, 4, "\r\n\r\n") == 0) {
      const auto cl = out.find("Content-Length: ");
      want = out.size() + (cl == std::string::npos ? 0 : std::stoul(out.substr(cl + 16)));
    }
  }
  return out;
}

/// promtool's verdict on an exposition body: "" when it passes, its output otherwise.
std::string promtool_check(const std::string& body, const std::string& dir, int index) {
  const std::string file = dir + "/body" + std::to_string(index) + ".txt";
  const std::string log = dir + "/promtool" + std::to_string(index) + ".log";
  std::ofstream(file) << body;
  const int rc = test::run("/bin/sh", {"-c", "/usr/bin/promtool check metrics < '" + file + "'"}, log);
  return rc == 0 ? "" : "promtool rc " + std::to_string(rc) + ": " + test::read_text(log);
}

struct Socket {  // a client socket, closed with the test
  int fd = -1;
  explicit Socket(int f = -1) : fd(f) {}
  Socket(Socket&& o) noexcept : fd(o.fd) { o.fd = -1; }
  Socket& operator=(Socket&& o) noexcept { std::swap(fd, o.fd); return *this; }
  ~Socket() {
    if (fd >= 0) ::close(fd);
  }
};

/// True when the server has closed `fd` (EOF within `within`) with nothing sent.
bool closed_silently(int fd, std::chrono::milliseconds within) {
  bool closed = false;
  const std::string got = read_until_close(fd, within, &closed);
  return closed && got.empty();
}

}  // namespace

TEST(MetricsEndpointFaults, SlowlorisClientsNeitherStarveAScrapeNorAddThreads) {
  if (!io::metrics_server_available()) GTEST_SKIP() << "built without cpp-httplib";
  const int port = test::free_port();
  io::MetricsServer server(training_like_registry(), "127.0.0.1", port, fast_limits());
  const size_t threads = entries("/proc/self/task");
  std::vector<Socket> slow;
  for (int i = 0; i < 16; ++i) {
    slow.emplace_back(connect_to(port));
    ASSERT_GE(slow.back().fd, 0);
    ASSERT_TRUE(send_all(slow.back().fd, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "));
  }
  // 8 rounds of 100 ms, within the 1 s request timeout: each slow client sends one more byte of a header that never
  // ends (so each recv of theirs is prompt), and a normal scrape must be answered at once.
  double worst = 0;
  size_t most_threads = threads;
  for (int round = 0; round < 8; ++round) {
    for (auto& s : slow) EXPECT_TRUE(send_all(s.fd, "x"));
    const double t = timed_scrape(port);
    EXPECT_GE(t, 0) << "round " << round << ": the scrape was not answered 200";
    worst = std::max(worst, t);
    most_threads = std::max(most_threads, entries("/proc/self/task"));
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_LT(worst, 0.5) << "slowest scrape while 16 clients trickled (s)";
  EXPECT_EQ(most_threads, threads) << "server threads grew with slow clients";
  // Past the request timeout each slow client has 408 and a closed connection.
  for (auto& s : slow) {
    bool closed = false;
    const std::string got = read_until_close(s.fd, 2000ms, &closed);
    EXPECT_TRUE(closed);
    EXPECT_EQ(status_of(got), 408) << got;
  }
}

TEST(MetricsEndpointFaults, SilentAndVanishedClientsAreClosedAtTheCapAndDeadlineWithoutLeaks) {
  if (!io::metrics_server_available()) GTEST_SKIP() << "built without cpp-httplib";
  const int port = test::free_port();
  auto limits = fast_limits();
  limits.max_connections = 8;
  const size_t fds = entries("/proc/self/fd");
  {
    io::MetricsServer server(training_like_registry(), "127.0.0.1", port, limits);
    const size_t server_fds = entries("/proc/self/fd");
    // Connected clients that never send (as a half-open connection looks to the server: the peer says nothing more),
    // and one that vanished mid-head with a reset.
    std::vector<Socket> first, second;
    for (int i = 0; i < 6; ++i) first.emplace_back(connect_to(port));
    {
      Socket gone(connect_to(port));
      send_all(gone.fd, "GET /met");
      linger hard{1, 0};
      ::setsockopt(gone.fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
    }
    const double t = timed_scrape(port);
    EXPECT_GE(t, 0);
    EXPECT_LT(t, 0.5);
    // 12 more: past the cap of 8 open, the ones waiting longest are closed at once (the first 6, then 4 of these).
    for (int i = 0; i < 12; ++i) second.emplace_back(connect_to(port));
    std::this_thread::sleep_for(200ms);
    auto is_closed = [](const Socket& s) {
      pollfd p{s.fd, POLLIN, 0};
      char c;
      return ::poll(&p, 1, 0) == 1 && ::recv(s.fd, &c, 1, MSG_DONTWAIT) == 0;
    };
    for (auto& s : first) EXPECT_TRUE(is_closed(s)) << "a connection over the cap stayed open";
    EXPECT_EQ(std::count_if(second.begin(), second.end(), is_closed), 4) << "of 12 more, 4 over the cap of 8";
    const double t2 = timed_scrape(port);  // a scrape still gets through: it closes the oldest waiting one
    EXPECT_GE(t2, 0);
    EXPECT_LT(t2, 0.5);
    // The rest are closed at the 1 s deadline, with nothing sent (no request had begun).
    for (auto& s : second) EXPECT_TRUE(closed_silently(s.fd, 2000ms));
    first.clear(), second.clear();
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(entries("/proc/self/fd"), server_fds) << "descriptors leaked while the server runs";
  }
  EXPECT_EQ(entries("/proc/self/fd"), fds) << "descriptors leaked after the server stopped";
}

TEST(MetricsEndpointFaults, AClientThatDoesNotReadIsCutOffAndDoesNotDelayAScrape) {
  if (!io::metrics_server_available()) GTEST_SKIP() << "built without cpp-httplib";
  const int port = test::free_port();
  auto limits = fast_limits();
  limits.workers = 1;  // the one worker is the one the slow reader would hold
  auto reg = training_like_registry(4000);  // ≈ 0.3 MB per response
  const size_t body = reg->render().size();
  io::MetricsServer server(reg, "127.0.0.1", port, limits);
  Socket reader(::socket(AF_INET, SOCK_STREAM, 0));
  int small = 4096;
  ::setsockopt(reader.fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  ASSERT_EQ(::connect(reader.fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  std::string pipelined;
  for (int i = 0; i < 60; ++i) pipelined += "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";  // ≈ 18 MB of answers
  ASSERT_TRUE(send_all(reader.fd, pipelined));
  std::this_thread::sleep_for(200ms);  // the worker is now blocked on the full socket
  const double t = timed_scrape(port);
  EXPECT_GE(t, 0);
  EXPECT_LT(t, 0.5 + 1.0) << "scrape behind a non-reading client (s); io_timeout is 0.5 s";
  std::this_thread::sleep_for(1000ms);  // twice io_timeout: reading from now on must find the connection cut
  bool closed = false;
  const std::string got = read_until_close(reader.fd, 3000ms, &closed);
  EXPECT_TRUE(closed) << "the non-reading client was not cut off";
  EXPECT_LT(got.size(), 60 * body) << "all 60 answers arrived: the client was not cut off";
}

TEST(MetricsEndpointFaults, MalformedRequestsGet4xxAndTheConnectionIsClosed) {
  if (!io::metrics_server_available()) GTEST_SKIP() << "built without cpp-httplib";
  const int port = test::free_port();
  io::MetricsServer server(training_like_registry(), "127.0.0.1", port, fast_limits());
  std::string many_headers = "GET /metrics HTTP/1.1\r\n";
  while (many_headers.size() < 20000) many_headers += "X-Filler: " + std::string(50, 'f') + "\r\n";
  const std::vector<std::pair<std::string, int>> cases = {
      {"HELLO\r\n\r\n", 400},                                                        // not a request line
      {std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11) + "\r\n\r\n", 400},  // a TLS hello
      {"FOO /metrics HTTP/1.1\r\n\r\n", 400},                                        // unknown method
      {"GET /metrics HTTP/9.9\r\n\r\n", 400},                                        // unknown version
      {"GET /metrics HTTP/1.1\r\nX-Long: " + std::string(9000, 'a') + "\r\n\r\n", 400},  // header line > 8 KiB
      {"GET /" + std::string(9000, 'a') + " HTTP/1.1\r\n\r\n", 414},                 // request line > 8 KiB
      {many_headers + "\r\n", 431},                                                  // head > 16 KiB
      {"POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", 405},
      {"PUT /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 405},
      {"DELETE /metrics HTTP/1.1\r\n\r\n", 405},
      {"GET /metrics HTTP/1.1\r\nContent-Length: 1000000000\r\n\r\n", 413},         // a body it would wait for
      {"GET /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 413},
      {"GET /nope HTTP/1.1\r\n\r\n", 404},
      {"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n", 408},                         // the head never ends
  };
  for (const auto& [request, want] : cases) {
    Socket s(connect_to(port));
    ASSERT_GE(s.fd, 0);
    send_all(s.fd, request);
    bool closed = false;
    const std::string got = read_until_close(s.fd, 3000ms, &closed);
    const std::string shown = request.substr(0, 40);
    EXPECT_EQ(status_of(got), want) << shown << "\n→ " << got.substr(0, 200);
    EXPECT_TRUE(closed) << shown << ": the connection stayed open";
  }
  // HEAD is answered like GET, without the body.
  Socket h(connect_to(port));
  send_all(h.fd, "HEAD /metrics HTTP/1.0\r\n\r\n");
  const std::string head = read_until_close(h.fd, 3000ms);
  EXPECT_EQ(status_of(head), 200) << head;
  EXPECT_EQ(head.substr(head.find("\r\n\r\n") + 4), "");
  EXPECT_GE(timed_scrape(port), 0) << "the server stopped answering after the bad requests";
}

TEST(MetricsEndpointFaults, KeepAliveAndPipelinedScrapesAreAnsweredAndPromtoolAcceptsEach) {
  if (!io::metrics_server_available()) GTEST_SKIP() << "built without cpp-httplib";
  const bool promtool = ::access("/usr/bin/promtool", X_OK) == 0;
  const std::string dir = test::scratch_dir("metrics_keepalive");
  const int port = test::free_port();
  auto limits = fast_limits();
  limits.keep_alive_max_requests = 4;
  auto reg = training_like_registry();
  io::MetricsServer server(reg, "127.0.0.1", port, limits);
  Socket s(connect_to(port));
  const std::string get = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  std::vector<std::string> responses;
  for (int i = 0; i < 2; ++i) {  // one at a time on the same connection, the registry changing between them
    reg->add("yolo11_steps_total", "rank=\"0\"", 1);
    ASSERT_TRUE(send_all(s.fd, get));
    responses.push_back(read_response(s.fd, 2000ms));
  }
  ASSERT_TRUE(send_all(s.fd, get + get));  // two pipelined in one segment: the 4th and last of this connection
  responses.push_back(read_response(s.fd, 2000ms));
  responses.push_back(read_response(s.fd, 2000ms));
  ASSERT_EQ(responses.size(), 4u);
  for (size_t i = 0; i < responses.size(); ++i) {
    const std::string& r = responses[i];
    ASSERT_EQ(status_of(r), 200) << "response " << i << ": " << r.substr(0, 200);
    EXPECT_NE(r.find("Content-Type: text/plain; version=0.0.4"), std::string::npos) << r.substr(0, 300);
    const std::string body = r.substr(r.find("\r\n\r\n") + 4);
    EXPECT_NE(body.find("yolo11_steps_total{rank=\"0\"} " + std::to_string(1235 + std::min<size_t>(i, 1))),
              std::string::npos)
        << body;
    if (promtool) {
      EXPECT_EQ(promtool_check(body, dir, static_cast<int>(i)), "") << body;
    }
  }
  EXPECT_EQ(responses[1].find("Connection: close"), std::string::npos) << "closed before keep_alive_max_requests";
  EXPECT_NE(responses[3].find("Connection: close"), std::string::npos) << responses[3].substr(0, 300);
  EXPECT_TRUE(closed_silently(s.fd, 1000ms)) << "the connection outlived keep_alive_max_requests";
  if (!promtool)
    GTEST_SKIP() << "no /usr/bin/promtool (apt-get install prometheus; tools/readers.sh): bodies unchecked";
}

// A response goes out as one write with TCP_NODELAY: httplib writes head and body separately, and the body's small
// segment then waited for the client's delayed ACK (40 ms on Linux), capping a keep-alive connection at 25 scrapes/s.
TEST(MetricsEndpointFaults, KeepAliveScrapesAreNotHeldByDelayedAcks) {
  if (!io::metrics_server_available()) GTEST_SKIP() << "built without cpp-httplib";
  const int port = test::free_port();
  io::MetricsServer server(training_like_registry(), "127.0.0.1", port);
  Socket s(connect_to(port));
  std::vector<double> ms;
  for (int i = 0; i < 20; ++i) {
    const auto t0 = Clock::now();
    ASSERT_TRUE(send_all(s.fd, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
    ASSERT_EQ(status_of(read_response(s.fd, 2000ms)), 200) << "request " << i;
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  EXPECT_LT(ms[ms.size() / 2], 20) << "median ms per keep-alive scrape";
}

TEST(MetricsEndpointFaults, TheDefaultBindIsLoopbackOnly) {
  if (!io::metrics_server_available()) GTEST_SKIP() << "built without cpp-httplib";
  const std::string host = config::TrainConfig::load("", {}).metrics_host;
  EXPECT_EQ(host, "127.0.0.1");
  const int port = test::free_port();
  io::MetricsServer server(training_like_registry(), host, port);
  // The kernel's table of listening sockets: ours is bound to 127.0.0.1 (0100007F), not 0.0.0.0.
  std::ifstream tcp("/proc/net/tcp");
  char want[8];
  std::snprintf(want, sizeof want, ":%04X", port);
  std::string line, local;
  while (std::getline(tcp, line)) {
    std::istringstream f(line);
    std::string sl, addr, rem, st;
    f >> sl >> addr >> rem >> st;
    if (st == "0A" && addr.size() > 5 && addr.compare(addr.size() - 5, 5, want) == 0) local = addr;
  }
  EXPECT_EQ(local, std::string("0100007F") + want);
  // And every other IPv4 address of this machine refuses the port.
  ifaddrs* ifs = nullptr;
  ASSERT_EQ(::getifaddrs(&ifs), 0);
  int others = 0;
  for (ifaddrs* i = ifs; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    const uint32_t addr = reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr;
    if ((ntohl(addr) >> 24) == 127) continue;
    ++others;
    const int fd = connect_to(port, addr);
    EXPECT_LT(fd, 0) << "port " << port << " answers on " << i->ifa_name;
    if (fd >= 0) ::close(fd);
  }
  ::freeifaddrs(ifs);
  std::cout << "non-loopback IPv4 addresses checked: " << others << "\n";
}

// render() holds the registry lock while it formats: at the size a training run has, that is microseconds, so the
// trainer's set() calls (one per value per step) are not stalled by scrapes, even back to back.
TEST(MetricsEndpointFaults, RenderHoldsTheRegistryLockForMicroseconds) {
  auto reg = training_like_registry();
  const std::string text = reg->render();
  size_t samples = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) samples += line.rfind('#', 0) != 0;
  std::vector<double> render_us;
  for (int i = 0; i < 2000; ++i) {
    const auto t0 = Clock::now();
    const std::string r = reg->render();
    render_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    ASSERT_EQ(r.size(), text.size());
  }
  std::atomic<bool> stop{false};
  std::atomic<long> renders{0};
  std::thread scraper([&] {  // scrapes back to back, far more often than wrk's 1,000/s
    while (!stop) reg->render(), ++renders;
  });
  while (renders == 0) std::this_thread::yield();
  std::vector<double> set_us;
  const auto end = Clock::now() + 200ms;
  for (int i = 0; Clock::now() < end; ++i) {
    const auto t0 = Clock::now();
    reg->set("yolo11_step_seconds", "rank=\"0\"", i);
    set_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  stop = true;
  scraper.join();
  auto pct = [](std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
  };
  std::cout << "registry of " << samples << " samples (" << text.size() << " bytes): render median "
            << pct(render_us, 0.5) << " µs, p99 " << pct(render_us, 0.99) << " µs; set() while rendering back to back: "
            << "median " << pct(set_us, 0.5) << " µs, p99 " << pct(set_us, 0.99) << " µs, max " << pct(set_us, 1.0)
            << " µs (" << set_us.size() << " calls, " << renders << " renders in 200 ms)\n";
  EXPECT_LT(pct(render_us, 0.5), 1000) << "render of a training-size registry (µs)";
  EXPECT_LT(pct(set_us, 0.5), 100) << "set() while scrapes render back to back (µs)";
}
