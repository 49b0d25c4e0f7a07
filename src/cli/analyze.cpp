// yolo11 analyze / yolo11-analyze RUN_DIR_OR_LOG: per-stage summary and bottleneck diagnosis of any instrumented run, from its
// breakdown.csv or the window lines of its train.log (and its operator table when profile_ops wrote ops.csv).
// yolo11-analyze RUN_A RUN_B: run diff (instrument/compare.h): per stage and img/s, change, p-values, verdict.
#include "yolo11/cli/cli.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>

#include "yolo11/instrument/analyze.h"
#include "yolo11/instrument/compare.h"
#include "yolo11/io/console.h"
#include "parse.h"

namespace yolo11::cli {

int analyze(int argc, char** argv) {
  io::setup_console();  // plain lines, errors on stderr, no LibTorch notices (include/yolo11/io/console.h)
  CLI::App app{"Per-stage time breakdown and bottleneck diagnosis of a yolo11 training run"};
  std::string path, path_b;
  bool json = false;
  app.add_option("path", path, "run directory (breakdown.csv or train.log inside) or a breakdown.csv / log file")
      ->required();
  app.add_option("path_b", path_b, "a second run: compare A (path) with B (stages, img/s, settings, verdict)");
  app.add_flag("--json", json, "print the combined summary and diagnosis as JSON");
  if (const int rc = parse(app, argc, argv); rc >= 0) return rc;
  try {
    if (!path_b.empty()) {
      const auto c = yolo11::instrument::compare_runs(path, path_b);
      if (!json) {
        std::cout << c.report;
        return 0;
      }
      nlohmann::json rows = nlohmann::json::array();
      for (const auto& row : c.rows)
        rows.push_back({{"name", row.name}, {"a", row.mean_a}, {"b", row.mean_b}, {"change", row.change},
                        {"p_welch", row.p_welch}, {"p_mann_whitney", row.p_mw}, {"hedges_g", row.g},
                        {"windows_a", row.n_a}, {"windows_b", row.n_b}, {"material", row.material},
                        {"significant", row.significant}});
      nlohmann::json settings = nlohmann::json::object();
      for (const auto& [k, v] : c.settings) settings[k] = {v.first, v.second};
      std::cout << nlohmann::json({{"a", c.a}, {"b", c.b}, {"rows", rows}, {"flagged", c.flagged},
                                   {"settings", settings}, {"verdict", c.verdict}}).dump(2)
                << "\n";
      return 0;
    }
    const auto r = yolo11::instrument::analyze_run(path);
    if (!json) {
      std::cout << r.report;
      return 0;
    }
    nlohmann::json stages = nlohmann::json::array();
    for (const auto& s : r.overall.stages) {
      stages.push_back({{"name", s.name}, {"mean_s", s.mean}, {"p50_s", s.p50}, {"p95_s", s.p95}, {"max_s", s.max},
                        {"share", s.share}});
    }
    const nlohmann::json j = {{"source", r.source},
                              {"windows", r.windows.size()},
                              {"steps", r.overall.steps},
                              {"step_mean_s", r.overall.step.mean},
                              {"images_per_s", r.overall.images_per_s},
                              {"mfu", r.overall.mfu >= 0 ? nlohmann::json(r.overall.mfu) : nlohmann::json(nullptr)},
                              {"tflops", r.overall.tflops >= 0 ? nlohmann::json(r.overall.tflops) : nlohmann::json(nullptr)},
                              {"stages", stages},
                              {"bottleneck", yolo11::instrument::to_string(r.diagnosis.bottleneck)},
                              {"reason", r.diagnosis.reason},
                              {"advice", r.diagnosis.advice},
                              {"context_source", r.context_source.empty() ? "unknown (defaults assumed)" : r.context_source}};
    std::cout << j.dump(2) << "\n";
  } catch (const std::exception& e) {
    return fail(argc > 0 ? argv[0] : nullptr, e);
  }
  return 0;
}

}  // namespace yolo11::cli
