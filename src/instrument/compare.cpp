// Run diff (include/yolo11/instrument/compare.h): window samples of two runs, Welch / Mann-Whitney tests, verdict.
#include "yolo11/instrument/compare.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>

#include "yolo11/instrument/analyze.h"
#include "yolo11/instrument/profiler.h"

namespace yolo11::instrument {

namespace {

double mean_of(const std::vector<double>& v) {
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}
double var_of(const std::vector<double>& v) {  // sample variance (n − 1)
  if (v.size() < 2) return 0.0;
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / static_cast<double>(v.size() - 1);
}

// Regularized incomplete beta I_x(a, b) by its continued fraction (Lentz), as in Numerical Recipes' betai/betacf.
double betacf(double a, double b, double x) {
  const double eps = 1e-14, fpmin = 1e-300;
  double qab = a + b, qap = a + 1, qam = a - 1, c = 1, d = 1 - qab * x / qap;
  if (std::fabs(d) < fpmin) d = fpmin;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 300; ++m) {
    const int m2 = 2 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < fpmin) d = fpmin;
    c = 1 + aa / c;
    if (std::fabs(c) < fpmin) c = fpmin;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < fpmin) d = fpmin;
    c = 1 + aa / c;
    if (std::fabs(c) < fpmin) c = fpmin;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < eps) break;
  }
  return h;
}
double betai(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double bt = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log(1 - x));
  return x < (a + 1) / (a + b + 2) ? bt * betacf(a, b, x) / a : 1 - bt * betacf(b, a, 1 - x) / b;
}

std::string p_text(double p) { return p < 0.001 ? "<0.001" : fmt::format("{:.3f}", p); }

}  // namespace

double welch_p(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() < 2 || b.size() < 2) return 1.0;
  const double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
  const double va = var_of(a) / na, vb = var_of(b) / nb, diff = mean_of(b) - mean_of(a);
  if (va + vb <= 0) return diff == 0 ? 1.0 : 0.0;
  const double t = diff / std::sqrt(va + vb);
  const double df = (va + vb) * (va + vb) / (va * va / (na - 1) + vb * vb / (nb - 1));
  return betai(df / 2, 0.5, df / (df + t * t));
}

double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.empty() || b.empty()) return 1.0;
  std::vector<std::pair<double, int>> all;
  for (double x : a) all.emplace_back(x, 0);
  for (double x : b) all.emplace_back(x, 1);
  std::sort(all.begin(), all.end());
  const double n = static_cast<double>(all.size()), n1 = static_cast<double>(a.size()), n2 = static_cast<double>(b.size());
  double r1 = 0, ties = 0;
  for (size_t i = 0; i < all.size();) {
    size_t j = i;
    while (j < all.size() && all[j].first == all[i].first) ++j;
    const double rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2.0, t = static_cast<double>(j - i);
    for (size_t k = i; k < j; ++k)
      if (all[k].second == 0) r1 += rank;
    ties += t * t * t - t;
    i = j;
  }
  const double u = r1 - n1 * (n1 + 1) / 2, mu = n1 * n2 / 2;
  const double sigma = std::sqrt(n1 * n2 / 12.0 * ((n + 1) - ties / (n * (n - 1))));
  if (sigma <= 0) return 1.0;
  const double z = std::max(0.0, std::fabs(u - mu) - 0.5) / sigma;
  return std::erfc(z / std::sqrt(2.0));
}

double hedges_g(const std::vector<double>& a, const std::vector<double>& b) {
  const double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
  if (na < 2 || nb < 2) return 0.0;
  const double sp = std::sqrt(((na - 1) * var_of(a) + (nb - 1) * var_of(b)) / (na + nb - 2));
  const double diff = mean_of(b) - mean_of(a);
  if (sp <= 0) return diff == 0 ? 0.0 : (diff > 0 ? 1e9 : -1e9);
  return diff / sp * (1 - 3 / (4 * (na + nb) - 9));
}

CompareResult compare_windows(const std::vector<WindowSummary>& a, const std::vector<WindowSummary>& b,
                              const CompareOptions& o) {
  CompareResult r;
  std::vector<std::string> names;
  auto add_names = [&](const std::vector<WindowSummary>& ws) {
    for (const auto& w : ws)
      for (const auto& s : w.stages)
        if (!s.per_epoch && std::find(names.begin(), names.end(), s.name) == names.end()) names.push_back(s.name);
  };
  add_names(a);
  add_names(b);
  std::stable_sort(names.begin(), names.end(), [](const std::string& x, const std::string& y) {
    auto rank = [](const std::string& n) {
      auto it = std::find(kStepStages.begin(), kStepStages.end(), n);
      return static_cast<size_t>(it - kStepStages.begin());
    };
    return rank(x) < rank(y);
  });
  auto samples = [](const std::vector<WindowSummary>& ws, const std::string& name) {
    std::vector<double> v;
    for (const auto& w : ws) {
      if (name == "step") v.push_back(w.step.mean);
      else if (name == "img/s") v.push_back(w.images_per_s);
      else if (const auto* s = w.find(name); s && s->count > 0) v.push_back(s->mean);
      else v.push_back(0.0);  // the stage did not run in that window: 0 s per step
    }
    return v;
  };
  const double step_a = mean_of(samples(a, "step"));
  names.push_back("step");
  names.push_back("img/s");
  for (const auto& n : names) {
    const auto sa = samples(a, n), sb = samples(b, n);
    CompareRow row;
    row.name = n;
    row.n_a = static_cast<int64_t>(sa.size());
    row.n_b = static_cast<int64_t>(sb.size());
    row.mean_a = mean_of(sa);
    row.mean_b = mean_of(sb);
    row.change = row.mean_a != 0 ? (row.mean_b - row.mean_a) / std::fabs(row.mean_a) : 0.0;
    row.p_welch = welch_p(sa, sb);
    row.p_mw = mann_whitney_p(sa, sb);
    row.g = hedges_g(sa, sb);
    const double d = std::fabs(row.mean_b - row.mean_a);
    row.material = n == "img/s" ? std::fabs(row.change) >= o.min_rel
                                : d >= o.min_rel * std::fabs(row.mean_a) && d >= o.min_step_share * step_a;
    row.significant = row.p_welch < o.alpha && row.material;
    if (row.significant && n != "step" && n != "img/s") r.flagged.push_back(n);
    r.rows.push_back(row);
  }
  r.verdict = verdict_of(r.rows, o);
  return r;
}

std::string verdict_of(const std::vector<CompareRow>& rows, const CompareOptions& o) {
  const auto p_of = [](double p) { return p < 0.001 ? std::string("p < 0.001") : fmt::format("p = {:.3f}", p); };
  const auto pct = [](double change) { return fmt::format("{:+.0f}%", 100 * change); };
  // Each row lands in exactly one group, by the same test the table's "*" shows: changed (significant and material),
  // a significant but small difference, a material difference that is not significant, or unchanged.
  std::vector<std::string> changed, small, unsure, unchanged;
  bool stage_changed = false;
  for (const auto& row : rows) {
    const bool ips = row.name == "img/s";
    if (row.significant) {
      // time per step: faster = less time, "x% faster" as the time saved relative to A; img/s: higher or lower
      const char* dir = ips ? (row.change > 0 ? "higher" : "lower") : (row.change < 0 ? "faster" : "slower");
      changed.push_back(fmt::format("{} {:.0f}% {} ({})", row.name, 100 * std::fabs(row.change), dir, p_of(row.p_welch)));
      stage_changed = stage_changed || (!ips && row.name != "step");
    } else if (row.p_welch < o.alpha) {
      small.push_back(fmt::format("{} {}", row.name, pct(row.change)));
    } else if (row.material) {
      unsure.push_back(fmt::format("{} {} ({})", row.name, pct(row.change), p_of(row.p_welch)));
    } else {
      unchanged.push_back(row.name);
    }
  }
  std::vector<std::string> parts;
  if (changed.empty()) {
    parts.push_back(fmt::format("no significant change (Welch p < {} and ≥ {:.0f}% of the stage and ≥ {:.0f}% of a "
                                "step)", o.alpha, 100 * o.min_rel, 100 * o.min_step_share));
  } else {
    parts = changed;
    if (!stage_changed) parts.push_back("no single stage changed significantly");
  }
  const auto join = [](const std::vector<std::string>& v) {
    std::string t;
    for (size_t i = 0; i < v.size(); ++i) t += (i ? ", " : "") + v[i];
    return t;
  };
  if (!small.empty())
    parts.push_back(fmt::format("significant but under {:.0f}% of the stage or {:.0f}% of a step: {}", 100 * o.min_rel,
                                100 * o.min_step_share, join(small)));
  if (!unsure.empty()) parts.push_back("not significant (Welch p ≥ " + fmt::format("{}", o.alpha) + "): " + join(unsure));
  if (!unchanged.empty() && !(changed.empty() && small.empty() && unsure.empty())) {
    if (small.empty() && unsure.empty()) parts.push_back("everything else unchanged");
    else parts.push_back("unchanged: " + join(unchanged));
  }
  std::string v;
  for (size_t i = 0; i < parts.size(); ++i) v += (i ? "; " : "") + parts[i];
  return v;
}

std::vector<std::pair<std::string, std::pair<std::string, std::string>>> diff_args(const std::string& args_a,
                                                                                  const std::string& args_b) {
  auto read = [](const std::string& p, std::vector<std::string>& order) {
    std::map<std::string, std::string> kv;
    std::ifstream f(p);
    for (std::string l; std::getline(f, l);) {
      if (l.empty() || l[0] == '#' || l[0] == ' ') continue;
      const auto c = l.find(':');
      if (c == std::string::npos) continue;
      std::string k = l.substr(0, c), v = l.substr(c + 1);
      const auto h = v.find(" #");
      if (h != std::string::npos) v = v.substr(0, h);
      v.erase(0, v.find_first_not_of(' '));
      v.erase(v.find_last_not_of(" \r") + 1);
      if (!kv.count(k)) order.push_back(k);
      kv[k] = v;
    }
    return kv;
  };
  std::vector<std::string> order;
  const auto a = read(args_a, order), b = read(args_b, order);
  std::vector<std::pair<std::string, std::pair<std::string, std::string>>> out;
  for (const auto& k : order) {
    if (k == "name" || k == "project" || k == "exist_ok" || k == "resume") continue;
    if (std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.first == k; }) != out.end()) continue;
    const auto ia = a.find(k), ib = b.find(k);
    const std::string va = ia == a.end() ? "-" : ia->second, vb = ib == b.end() ? "-" : ib->second;
    if (va != vb) out.push_back({k, {va, vb}});
  }
  return out;
}

CompareResult compare_runs(const std::string& path_a, const std::string& path_b, const CompareOptions& o) {
  const AnalyzeResult ra = analyze_run(path_a), rb = analyze_run(path_b);
  CompareResult r = compare_windows(ra.windows, rb.windows, o);
  r.a = ra.source;
  r.b = rb.source;
  namespace fs = std::filesystem;
  auto dir_of = [](const std::string& p) { return fs::is_directory(p) ? fs::path(p) : fs::path(p).parent_path(); };
  r.settings = diff_args((dir_of(path_a) / "args.yaml").string(), (dir_of(path_b) / "args.yaml").string());
  std::string t = fmt::format("run diff: A = {} ({} windows, {} steps)\n          B = {} ({} windows, {} steps)\n", r.a,
                              ra.windows.size(), ra.overall.steps, r.b, rb.windows.size(), rb.overall.steps);
  if (r.settings.empty()) {
    t += "settings: no difference in args.yaml (other than name/project)\n";
  } else {
    t += "settings that differ (args.yaml, A → B):";
    for (const auto& [k, v] : r.settings) t += fmt::format(" {}={} → {};", k, v.first, v.second);
    t.back() = '\n';
  }
  t += fmt::format("{:<12}{:>12}{:>12}{:>10}{:>11}{:>9}{:>10}  {}\n", "stage", "A", "B", "change", "p Welch", "p MW",
                   "Hedges g", "");
  for (const auto& row : r.rows) {
    const bool ips = row.name == "img/s";
    const auto v = [&](double x) { return ips ? fmt::format("{:.1f}", x) : fmt::format("{:.4f}s", x); };
    t += fmt::format("{:<12}{:>12}{:>12}{:>+9.1f}%{:>11}{:>9}{:>10}  {}\n", row.name, v(row.mean_a), v(row.mean_b),
                     100 * row.change, p_text(row.p_welch), p_text(row.p_mw),
                     std::fabs(row.g) >= 1e9 ? std::string(row.g > 0 ? "+inf" : "-inf") : fmt::format("{:+.2f}", row.g),
                     row.significant ? "*" : "");
  }
  if (ra.windows.size() < 2 || rb.windows.size() < 2)
    t += "note: fewer than 2 windows in a run: no test possible (lower log_every for more windows)\n";
  t += "verdict: " + r.verdict + "\n";
  r.report = std::move(t);
  return r;
}

}  // namespace yolo11::instrument
