// Prometheus /metrics endpoint (issue 11): a coco8 run with metrics_port=N answers real HTTP requests while it trains
// (made from the run's own callbacks, over a plain socket) with the text exposition format, values matching what the
// trainer reports; a port already in use is a clear error naming it; the server is gone when the run ends.
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "golden.h"
#include "http_test_client.h"
#include "process.h"
#include "yolo11/config/train_config.h"
#include "yolo11/engine/callbacks.h"
#include "yolo11/engine/results.h"
#include "yolo11/engine/trainer.h"
#include "yolo11/io/metrics_server.h"

using namespace yolo11;
using engine::Event;

namespace {

using test::free_port;
using test::http_get;
using test::Listener;

/// Parses the text exposition: "name{labels}" → value; "# TYPE name kind" into `types`. Fails on a malformed line.
std::map<std::string, double> parse_exposition(const std::string& text, std::map<std::string, std::string>& types) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream t(line.substr(7));
      std::string name, kind;
      t >> name >> kind;
      types[name] = kind;
      continue;
    }
    if (line[0] == '#') continue;
    const auto sp = line.rfind(' ');
    if (sp == std::string::npos) throw std::runtime_error("malformed exposition line: " + line);
    out[line.substr(0, sp)] = std::stod(line.substr(sp + 1));
  }
  return out;
}

}  // namespace

TEST(MetricsEndpoint, ServesPrometheusTextDuringACoco8Run) {
  const std::string project = test::scratch_dir("metrics_run");
  const int port = free_port();
  auto args = test::coco8_train_args(project, "run", 2, 2);
  for (const std::string& a : std::vector<std::string>{"instrument=basic", "log_every=1", "instrument_warmup=0", "metrics_port=" + std::to_string(port)})
    args.push_back(a);
  engine::Trainer trainer(config::TrainConfig::load("", args));
  if (!io::metrics_server_available()) {
    try {
      trainer.train();
      FAIL() << "metrics_port trained without cpp-httplib";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("libcpp-httplib-dev"), std::string::npos) << e.what();
    }
    return;
  }

  std::vector<std::string> problems;
  int scrapes = 0;
  auto scrape = [&](const char* when, std::map<std::string, std::string>& types) {
    const auto [status, body] = http_get(port, "/metrics");
    ++scrapes;
    if (status != 200) problems.push_back(std::string(when) + ": HTTP " + std::to_string(status) + " " + body);
    return parse_exposition(body, types);
  };
  const std::string r0 = "{rank=\"0\"}";
  trainer.add_callback(Event::on_train_epoch_end, [&](engine::TrainContext& c) {
    std::map<std::string, std::string> types;
    auto m = scrape("on_train_epoch_end", types);
    const double steps = static_cast<double>(2 * (c.epoch + 1));
    auto expect = [&](const std::string& key, double want, double tol = 0) {
      if (!m.count(key)) problems.push_back("missing " + key);
      else if (std::abs(m[key] - want) > tol + 1e-6 * std::abs(want))
        problems.push_back(key + " = " + std::to_string(m[key]) + ", want " + std::to_string(want));
    };
    expect("yolo11_up" + r0, 1);
    expect("yolo11_world_size" + r0, 1);
    expect("yolo11_epoch" + r0, static_cast<double>(c.epoch + 1));
    expect("yolo11_epochs" + r0, 2);
    expect("yolo11_steps_total" + r0, steps);
    expect("yolo11_images_total" + r0, 2 * steps);
    const char* losses[3] = {"box", "cls", "dfl"};
    for (size_t k = 0; k < 3; ++k)
      expect(std::string("yolo11_train_loss{loss=\"") + losses[k] + "\",rank=\"0\"}", c.tloss[k], 1e-6 * std::abs(c.tloss[k]));
    for (const char* st : {"dataloader", "forward", "backward"}) {
      const std::string key = std::string("yolo11_stage_seconds_total{stage=\"") + st + "\",rank=\"0\"}";
      if (!(m[key] > 0)) problems.push_back(key + " not > 0");
    }
    for (const char* key : {"yolo11_step_seconds", "yolo11_images_per_second"})
      if (!(m[key + r0] > 0)) problems.push_back(std::string(key) + " not > 0");
    if (!(m["yolo11_data_wait_ratio" + r0] >= 0 && m["yolo11_data_wait_ratio" + r0] <= 1)) problems.push_back("data wait");
    if (types["yolo11_stage_seconds_total"] != "counter" || types["yolo11_steps_total"] != "counter" ||
        types["yolo11_step_seconds"] != "gauge")
      problems.push_back("wrong # TYPE lines");
    if (m.count("yolo11_gpu_utilization_percent" + r0)) problems.push_back("GPU utilisation on a CPU run");
    if (!(m["yolo11_lr{group=\"0\",rank=\"0\"}"] > 0)) problems.push_back("lr group 0");
  });
  trainer.add_callback(Event::on_fit_epoch_end, [&](engine::TrainContext& c) {
    std::map<std::string, std::string> types;
    auto m = scrape("on_fit_epoch_end", types);
    if (c.row == nullptr) return;
    const std::pair<const char*, double> want[] = {{"mAP50", c.row->map50}, {"mAP50-95", c.row->map50_95},
                                                   {"precision", c.row->precision}, {"recall", c.row->recall}};
    for (const auto& [name, v] : want) {
      const std::string key = std::string("yolo11_val_metric{metric=\"") + name + "\",rank=\"0\"}";
      if (!m.count(key) || std::abs(m[key] - v) > 1e-9) problems.push_back(key + " missing or wrong");
    }
    const std::string vl = "yolo11_val_loss{loss=\"box\",rank=\"0\"}";
    if (!m.count(vl) || std::abs(m[vl] - c.row->val_box_loss) > 1e-9) problems.push_back(vl + " missing or wrong");
    if (http_get(port, "/").first != 404) problems.push_back("/ is not 404");
  });

  const auto summary = trainer.train();
  ASSERT_EQ(summary.epochs_done, 2);
  EXPECT_EQ(scrapes, 4);
  EXPECT_TRUE(problems.empty()) << problems.size() << " problems, first: " << problems.front();
  EXPECT_EQ(http_get(port, "/metrics").first, -1) << "the server outlived the run";
}

TEST(MetricsEndpoint, APortInUseIsAClearErrorNamingThePort) {
  Listener busy;  // another process's server, as far as the trainer can tell
  const std::string project = test::scratch_dir("metrics_busy");
  auto args = test::coco8_train_args(project, "run", 1, 2);
  args.push_back("metrics_port=" + std::to_string(busy.port));
  engine::Trainer trainer(config::TrainConfig::load("", args));
  try {
    trainer.train();
    FAIL() << "trained with metrics_port on a busy port";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    const std::string p = std::to_string(busy.port);
    if (io::metrics_server_available()) {
      EXPECT_NE(msg.find("metrics_port=" + p), std::string::npos) << msg;
      EXPECT_NE(msg.find("127.0.0.1:" + p), std::string::npos) << msg;
      EXPECT_NE(msg.find("in use"), std::string::npos) << msg;
    } else {
      EXPECT_NE(msg.find("libcpp-httplib-dev"), std::string::npos) << msg;
    }
  }
  // The server class alone: a second server on a port the first holds is refused the same way.
  if (io::metrics_server_available()) {
    auto reg = std::make_shared<io::MetricsRegistry>();
    const int port = free_port();
    io::MetricsServer first(reg, "127.0.0.1", port);
    EXPECT_THROW(io::MetricsServer(reg, "127.0.0.1", port), std::runtime_error);
  }
}

TEST(MetricsEndpoint, RegistryRendersHelpTypeAndLabelledSamples) {
  io::MetricsRegistry reg;
  reg.declare("b_total", io::MetricsRegistry::Type::counter, "a counter");
  reg.declare("a", io::MetricsRegistry::Type::gauge, "a gauge");
  reg.declare("unused", io::MetricsRegistry::Type::gauge, "never set");
  reg.add("b_total", "x=\"1\"", 2);
  reg.add("b_total", "x=\"1\"", 0.5);
  reg.set("a", "", 7);
  EXPECT_EQ(reg.render(), "# HELP a a gauge\n# TYPE a gauge\na 7\n# HELP b_total a counter\n# TYPE b_total counter\n"
                          "b_total{x=\"1\"} 2.5\n");
  EXPECT_THROW(reg.set("nope", "", 1), std::logic_error);
  // The text is built once per change: every kind of change shows in the next render.
  EXPECT_EQ(reg.render(), reg.render());
  reg.set("a", "", 8);
  EXPECT_NE(reg.render().find("\na 8\n"), std::string::npos) << reg.render();
  reg.add("b_total", "x=\"1\"", 1);
  EXPECT_NE(reg.render().find("b_total{x=\"1\"} 3.5\n"), std::string::npos) << reg.render();
  reg.declare("c", io::MetricsRegistry::Type::gauge, "later");
  reg.set("c", "", 1);
  EXPECT_NE(reg.render().find("# HELP c later\n# TYPE c gauge\nc 1\n"), std::string::npos) << reg.render();
}

// A real Prometheus server (Debian's `prometheus`, test-only: .ci/run installs it) scrapes a coco8 run's /metrics every
// second while it trains and stores the run's samples, and `promtool check metrics` passes on what the run serves.
TEST(MetricsEndpoint, APrometheusServerScrapesARunAndPromtoolAcceptsTheText) {
  if (!io::metrics_server_available()) GTEST_SKIP() << "built without cpp-httplib: metrics_port is a clear error here";
  const std::string prometheus = "/usr/bin/prometheus", promtool = "/usr/bin/promtool";
  if (::access(prometheus.c_str(), X_OK) != 0 || ::access(promtool.c_str(), X_OK) != 0)
    GTEST_SKIP() << "no " << prometheus << " / " << promtool << " (apt-get install prometheus; test-only)";
  const std::string project = test::scratch_dir("metrics_prometheus");
  const int port = free_port(), prom_port = free_port();
  {
    std::ofstream cfg(project + "/prometheus.yml");
    cfg << "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: yolo11\n"
        << "    static_configs:\n      - targets: ['127.0.0.1:" << port << "']\n";
  }
  const pid_t server = test::spawn(prometheus, {"--config.file=" + project + "/prometheus.yml",
                                                "--storage.tsdb.path=" + project + "/tsdb",
                                                "--web.listen-address=127.0.0.1:" + std::to_string(prom_port)},
                                   project + "/prometheus.log");
  struct Stop {  // the server goes with the test, whatever happens
    pid_t pid;
    ~Stop() { ::kill(pid, SIGTERM), test::wait_exit(pid); }
  } stop{server};
  auto query = [&](const std::string& q) { return http_get(prom_port, "/api/v1/query?query=" + q); };
  for (int i = 0; i < 300 && http_get(prom_port, "/-/ready").first != 200; ++i) ::usleep(100'000);
  ASSERT_EQ(http_get(prom_port, "/-/ready").first, 200) << test::read_text(project + "/prometheus.log");

  auto args = test::coco8_train_args(project, "run", 2, 2);
  for (const std::string& a : std::vector<std::string>{"instrument=basic", "log_every=1", "instrument_warmup=0",
                                                       "metrics_port=" + std::to_string(port)})
    args.push_back(a);
  engine::Trainer trainer(config::TrainConfig::load("", args));
  std::string stored, served;
  int promtool_rc = -100;
  trainer.add_callback(Event::on_train_epoch_end, [&](engine::TrainContext& c) {
    if (c.epoch != 1) return;  // the last epoch, while the run's server is up: wait (≤ 20 s) for a scrape of it
    for (int i = 0; i < 200; ++i) {
      stored = query("yolo11_epoch").second;
      if (stored.find("\"2\"]") != std::string::npos) break;
      ::usleep(100'000);
    }
    served = http_get(port, "/metrics").second;
    std::ofstream(project + "/metrics.txt") << served;
    promtool_rc = test::run("/bin/sh", {"-c", promtool + " check metrics < '" + project + "/metrics.txt'"},
                            project + "/promtool.log");
  });
  const auto summary = trainer.train();
  ASSERT_EQ(summary.epochs_done, 2);
  // The stored sample: {"metric":{"__name__":"yolo11_epoch","instance":"127.0.0.1:<port>","job":"yolo11","rank":"0"},
  // "value":[<time>,"2"]}
  EXPECT_NE(stored.find("\"status\":\"success\""), std::string::npos) << stored;
  EXPECT_NE(stored.find("\"job\":\"yolo11\""), std::string::npos) << stored;
  EXPECT_NE(stored.find("\"rank\":\"0\""), std::string::npos) << stored;
  EXPECT_NE(stored.find("\"2\"]"), std::string::npos) << "no scrape of epoch 2 stored in 20 s: " << stored << "\n"
                                                      << test::read_text(project + "/prometheus.log");
  const auto up = query("up").second;  // the scrape itself succeeded
  EXPECT_NE(up.find("\"instance\":\"127.0.0.1:" + std::to_string(port) + "\""), std::string::npos) << up;
  const auto steps = query("max_over_time(yolo11_steps_total[5m])").second;
  EXPECT_NE(steps.find("\"value\":["), std::string::npos) << steps;
  EXPECT_NE(served.find("yolo11_steps_total"), std::string::npos) << served;
  EXPECT_EQ(promtool_rc, 0) << test::read_text(project + "/promtool.log") << "\non:\n" << served;
}
