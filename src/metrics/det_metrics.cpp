#include "yolo11/metrics/det_metrics.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <set>
#include <sstream>
#include <stdexcept>

#include "yolo11/plot/text.h"
#include "yolo11/loss/iou.h"
#include "yolo11/metrics/curves.h"

namespace yolo11::metrics {
namespace {

constexpr int kCurvePoints = 1000;

/// numpy.linspace(0, 1, n): i · (1 / (n − 1)), last point exactly 1.
std::vector<double> linspace01(int n) {
  std::vector<double> x(n);
  const double step = 1.0 / (n - 1);
  for (int i = 0; i < n; ++i) x[i] = i * step;
  x[n - 1] = 1.0;
  return x;
}

int64_t check_class(double c, int64_t nc, const char* what) {
  const auto ci = static_cast<int64_t>(c);
  if (ci < 0 || ci >= nc || static_cast<double>(ci) != c)
    throw std::runtime_error(std::string("DetMetrics: ") + what + " class id " + std::to_string(c) +
                             " is outside [0, " + std::to_string(nc) + "); check the dataset names / nc");
  return ci;
}

/// compute_ap's recall with sentinels (mrec) and precision envelope (mpre) of one cumulative curve.
void pr_envelope(const std::vector<double>& recall, const std::vector<double>& precision, std::vector<double>& mrec,
                 std::vector<double>& mpre) {
  mrec.assign(1, 0.0), mpre.assign(1, 1.0);
  mrec.insert(mrec.end(), recall.begin(), recall.end());
  mpre.insert(mpre.end(), precision.begin(), precision.end());
  mrec.push_back(recall.back());
  mpre.push_back(0.0);
  mrec.push_back(1.0);
  mpre.push_back(0.0);
  for (size_t i = mpre.size() - 1; i-- > 0;) mpre[i] = std::max(mpre[i], mpre[i + 1]);  // precision envelope
}

}  // namespace

std::array<float, kNumIou> iou_thresholds() {
  auto t = torch::linspace(0.5, 0.95, kNumIou, torch::kFloat);
  std::array<float, kNumIou> out{};
  for (int i = 0; i < kNumIou; ++i) out[i] = t[i].item<float>();
  return out;
}

at::Tensor match_predictions(const at::Tensor& pred_cls, const at::Tensor& gt_cls, const at::Tensor& iou_in) {
  const int64_t n = pred_cls.numel(), m = gt_cls.numel();
  auto correct = torch::zeros({n, kNumIou}, torch::kBool);
  if (n == 0 || m == 0) return correct;
  if (iou_in.dim() != 2 || iou_in.size(0) != m || iou_in.size(1) != n) {
    std::ostringstream ss;
    ss << "match_predictions: iou must be (n_gt=" << m << ", n_pred=" << n << "), got " << iou_in.sizes();
    throw std::runtime_error(ss.str());
  }
  auto same =
      gt_cls.to(torch::kCPU, torch::kDouble).view({m, 1}) == pred_cls.to(torch::kCPU, torch::kDouble).view({1, n});
  auto iou = (iou_in.detach().to(torch::kCPU, torch::kFloat) * same).contiguous();
  auto ia = iou.accessor<float, 2>();
  auto ca = correct.accessor<bool, 2>();
  const auto thr = iou_thresholds();
  std::vector<int64_t> best_gt(n);
  std::vector<float> best_iou(n);
  std::vector<char> taken(m);
  for (int t = 0; t < kNumIou; ++t) {
    // Each prediction keeps its highest-IoU GT (ties: the later GT, as the reference's reversed sort gives).
    std::fill(best_gt.begin(), best_gt.end(), -1);
    for (int64_t g = 0; g < m; ++g)
      for (int64_t p = 0; p < n; ++p) {
        const float v = ia[g][p];
        if (v >= thr[t] && (best_gt[p] < 0 || v >= best_iou[p])) best_gt[p] = g, best_iou[p] = v;
      }
    // Each GT keeps the prediction with the smallest index.
    std::fill(taken.begin(), taken.end(), 0);
    for (int64_t p = 0; p < n; ++p) {
      const int64_t g = best_gt[p];
      if (g >= 0 && !taken[g]) taken[g] = 1, ca[p][t] = true;
    }
  }
  return correct;
}

double interp(double x, const std::vector<double>& xp, const std::vector<double>& fp, double left, double right) {
  const size_t n = xp.size();
  if (n == 0) throw std::runtime_error("interp: empty sample points");
  if (x > xp[n - 1]) return right;
  if (x < xp[0]) return left;
  if (x == xp[n - 1]) return fp[n - 1];
  const size_t j =
      static_cast<size_t>(std::upper_bound(xp.begin(), xp.end(), x) - xp.begin()) - 1;  // xp[j] ≤ x < xp[j+1]
  if (xp[j] == x) return fp[j];
  const double slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j]);
  double r = slope * (x - xp[j]) + fp[j];
  if (std::isnan(r)) {
    r = slope * (x - xp[j + 1]) + fp[j + 1];
    if (std::isnan(r) && fp[j] == fp[j + 1]) r = fp[j];
  }
  return r;
}

double compute_ap(const std::vector<double>& recall, const std::vector<double>& precision) {
  if (recall.empty()) return 0.0;
  std::vector<double> mrec, mpre;
  pr_envelope(recall, precision, mrec, mpre);
  const auto x = linspace01(101);
  double ap = 0, prev = interp(x[0], mrec, mpre, mpre.front(), mpre.back());
  for (size_t i = 1; i < x.size(); ++i) {
    const double cur = interp(x[i], mrec, mpre, mpre.front(), mpre.back());
    ap += (x[i] - x[i - 1]) * (cur + prev) / 2.0;
    prev = cur;
  }
  return ap;
}

double ClassResult::ap50_95() const { return std::accumulate(ap.begin(), ap.end(), 0.0) / kNumIou; }

ApPerClass ap_per_class(const at::Tensor& tp_in, const at::Tensor& conf_in, const at::Tensor& pred_cls_in,
                        const at::Tensor& target_cls_in, double eps) {
  const int64_t n = conf_in.numel();
  if (tp_in.size(0) != n || pred_cls_in.numel() != n || (n > 0 && tp_in.size(1) != kNumIou))
    throw std::runtime_error("ap_per_class: tp must be (N, 10) with N = conf.numel() = pred_cls.numel()");
  auto tp_t = tp_in.to(torch::kCPU, torch::kBool).contiguous();
  const auto conf = to_doubles(conf_in.to(torch::kFloat));
  const auto pcls = to_doubles(pred_cls_in);
  const auto tcls = to_doubles(target_cls_in);
  // Order by confidence, descending (stable).
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return conf[a] > conf[b]; });
  auto tpa = tp_t.accessor<bool, 2>();

  std::map<int64_t, int64_t> counts;
  for (double c : tcls) counts[static_cast<int64_t>(c)]++;
  ApPerClass out;
  const auto x = linspace01(kCurvePoints);
  std::vector<double> negx(kCurvePoints);
  for (int i = 0; i < kCurvePoints; ++i) negx[i] = -x[i];
  for (const auto& [c, n_l] : counts) {
    out.classes.push_back(c);
    out.num_gt.push_back(n_l);
    std::array<double, kNumIou> ap{};
    std::vector<double> pc(kCurvePoints, 0.0), rc(kCurvePoints, 0.0), prc(kCurvePoints, 0.0);
    std::vector<int64_t> idx;
    for (int64_t k : order)
      if (static_cast<int64_t>(pcls[k]) == c) idx.push_back(k);
    out.num_pred.push_back(static_cast<int64_t>(idx.size()));
    if (!idx.empty()) {
      const size_t np = idx.size();
      std::vector<double> negconf(np);
      for (size_t k = 0; k < np; ++k) negconf[k] = -conf[idx[k]];
      for (int j = 0; j < kNumIou; ++j) {
        std::vector<double> rec(np), prec(np);
        double tpc = 0, fpc = 0;
        for (size_t k = 0; k < np; ++k) {
          const bool hit = tpa[idx[k]][j];
          tpc += hit ? 1 : 0;
          fpc += hit ? 0 : 1;
          rec[k] = tpc / (static_cast<double>(n_l) + eps);
          prec[k] = tpc / (tpc + fpc);
        }
        if (j == 0) {
          for (int i = 0; i < kCurvePoints; ++i) {
            rc[i] = interp(negx[i], negconf, rec, 0.0, rec.back());
            pc[i] = interp(negx[i], negconf, prec, 1.0, prec.back());
          }
          std::vector<double> mrec, mpre;  // precision at recall x (np.interp's default ends)
          pr_envelope(rec, prec, mrec, mpre);
          for (int i = 0; i < kCurvePoints; ++i) prc[i] = interp(x[i], mrec, mpre, mpre.front(), mpre.back());
        }
        ap[j] = compute_ap(rec, prec);
      }
    }
    out.ap.push_back(ap);
    out.p_curve.push_back(std::move(pc));
    out.r_curve.push_back(std::move(rc));
    out.pr_curve.push_back(std::move(prc));
  }
  const size_t nc = out.classes.size();
  std::vector<double> f1_mean(kCurvePoints, 0.0);
  for (size_t ci = 0; ci < nc; ++ci) {
    std::vector<double> f1(kCurvePoints);
    for (int i = 0; i < kCurvePoints; ++i) {
      const double p = out.p_curve[ci][i], r = out.r_curve[ci][i];
      f1[i] = 2 * p * r / (p + r + eps);
      f1_mean[i] += f1[i];
    }
    out.f1_curve.push_back(std::move(f1));
  }
  if (nc > 0)
    for (auto& v : f1_mean) v /= static_cast<double>(nc);
  const auto sm = smooth(f1_mean, 0.1);
  out.max_f1_index = std::max_element(sm.begin(), sm.end()) - sm.begin();
  for (size_t ci = 0; ci < nc; ++ci) {
    const double p = out.p_curve[ci][out.max_f1_index], r = out.r_curve[ci][out.max_f1_index];
    out.p.push_back(p);
    out.r.push_back(r);
    out.f1.push_back(out.f1_curve[ci][out.max_f1_index]);
    const double tp = std::nearbyint(r * static_cast<double>(out.num_gt[ci]));
    out.tp.push_back(tp);
    out.fp.push_back(std::nearbyint(tp / (p + eps) - tp));
  }
  return out;
}

// ---- DetMetrics --------------------------------------------------------------------------------------------------

DetMetrics::DetMetrics(std::vector<std::string> names)
    : names_(std::move(names)), cm_(std::max<int64_t>(1, static_cast<int64_t>(names_.size()))) {
  if (names_.empty()) throw std::runtime_error("DetMetrics: class names must not be empty");
  images_per_class_.assign(names_.size(), 0);
}

void DetMetrics::reset() {
  cm_ = ConfusionMatrix(static_cast<int64_t>(names_.size()));
  tp_.clear(), conf_.clear(), pred_cls_.clear(), target_cls_.clear();
  std::fill(images_per_class_.begin(), images_per_class_.end(), 0);
  seen_ = 0;
}

void DetMetrics::update(const at::Tensor& pred_in, const at::Tensor& gt_cls_in, const at::Tensor& gt_boxes_in) {
  torch::NoGradGuard no_grad;
  const int64_t nc = static_cast<int64_t>(names_.size());
  if ((pred_in.numel() > 0 && (pred_in.dim() != 2 || pred_in.size(1) != 6)) ||
      gt_boxes_in.numel() != gt_cls_in.numel() * 4) {
    std::ostringstream ss;
    ss << "DetMetrics::update: expected pred (n, 6) and gt_boxes (m, 4) with m = gt_cls.numel(); got pred "
       << pred_in.sizes() << ", gt_cls " << gt_cls_in.sizes() << ", gt_boxes " << gt_boxes_in.sizes();
    throw std::runtime_error(ss.str());
  }
  auto pred = pred_in.detach().to(torch::kCPU, torch::kFloat).view({-1, 6});
  auto gt_cls = gt_cls_in.detach().to(torch::kCPU, torch::kDouble).view({-1});
  auto gt_boxes = gt_boxes_in.detach().to(torch::kCPU, torch::kFloat).view({-1, 4});
  std::set<int64_t> present;
  for (double c : to_doubles(gt_cls)) present.insert(check_class(c, nc, "ground-truth"));
  for (double c : to_doubles(pred.select(1, 5))) check_class(c, nc, "predicted");
  for (int64_t c : present) images_per_class_[c]++;
  ++seen_;
  auto pcls = pred.select(1, 5);
  at::Tensor tp;
  if (gt_cls.numel() == 0 || pred.size(0) == 0)
    tp = torch::zeros({pred.size(0), kNumIou}, torch::kBool);
  else
    tp = match_predictions(pcls, gt_cls, loss::box_iou(gt_boxes, pred.narrow(1, 0, 4)));
  tp_.push_back(tp);
  conf_.push_back(pred.select(1, 4).clone());
  pred_cls_.push_back(pcls.clone());
  target_cls_.push_back(gt_cls.clone());
  cm_.process_batch(pred, gt_cls, gt_boxes);
}

ApPerClass DetMetrics::ap_stats() const {
  auto cat = [](const std::vector<at::Tensor>& v, at::Tensor empty) { return v.empty() ? empty : torch::cat(v); };
  return ap_per_class(cat(tp_, torch::zeros({0, kNumIou}, torch::kBool)), cat(conf_, torch::zeros({0})),
                      cat(pred_cls_, torch::zeros({0})), cat(target_cls_, torch::zeros({0}, torch::kDouble)));
}

DetMetrics::Results DetMetrics::compute() const {
  Results res;
  const int64_t nc = static_cast<int64_t>(names_.size());
  res.images = seen_;
  const auto apc = ap_stats();
  for (int64_t n : apc.num_gt) res.instances += n;
  res.max_f1_index = apc.max_f1_index;
  const size_t ne = apc.classes.size();
  double sp = 0, sr = 0, s50 = 0, s75 = 0, sall = 0;
  for (size_t i = 0; i < ne; ++i) {
    ClassResult cr;
    cr.cls = apc.classes[i];
    cr.name = names_[cr.cls];
    cr.images = images_per_class_[cr.cls];
    cr.instances = apc.num_gt[i];
    cr.p = apc.p[i], cr.r = apc.r[i], cr.f1 = apc.f1[i];
    cr.ap = apc.ap[i];
    sp += cr.p, sr += cr.r, s50 += cr.ap[0], s75 += cr.ap[5];
    for (double a : cr.ap) sall += a;
    res.per_class.push_back(cr);
  }
  if (ne > 0) {
    res.precision = sp / ne, res.recall = sr / ne, res.map50 = s50 / ne, res.map75 = s75 / ne;
    res.map50_95 = sall / (ne * kNumIou);
  }
  res.fitness = res.map50_95;
  res.maps.assign(nc, res.map50_95);
  for (const auto& cr : res.per_class) res.maps[cr.cls] = cr.ap50_95();
  return res;
}

std::string DetMetrics::table(const Results& r) const {
  auto row = [](const std::string& name, int64_t images, int64_t inst, double p, double rc, double m50, double m) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "%22s%11lld%11lld%11.3g%11.3g%11.3g%11.3g\n", name.c_str(),
                  static_cast<long long>(images), static_cast<long long>(inst), p, rc, m50, m);
    return std::string(buf);
  };
  char head[256];
  std::snprintf(head, sizeof head, "%22s%11s%11s%11s%11s%11s%11s\n", "Class", "Images", "Instances", "Box(P", "R",
                "mAP50", "mAP50-95)");
  std::string out = head;
  out += row("all", r.images, r.instances, r.precision, r.recall, r.map50, r.map50_95);
  if (names_.size() > 1)
    for (const auto& c : r.per_class) out += row(c.name, c.images, c.instances, c.p, c.r, c.ap50(), c.ap50_95());
  return out;
}

void DetMetrics::save_confusion_matrix_png(const std::string& path, bool normalize) const {
  cm_.save_png(path, names_, normalize);
}

void DetMetrics::save_confusion_matrix_csv(const std::string& path) const { cm_.save_csv(path, names_); }

void DetMetrics::save_curves(const std::string& save_dir) const {
  const auto apc = ap_stats();
  std::vector<std::string> labels;
  std::vector<double> ap50;
  std::vector<char> with_pred;
  for (size_t i = 0; i < apc.classes.size(); ++i) {
    const int64_t c = apc.classes[i];
    labels.push_back(plot::display_name(names_[static_cast<size_t>(c)], c));
    ap50.push_back(apc.ap[i][0]);
    with_pred.push_back(apc.num_pred[i] > 0);
  }
  const auto px = linspace01(kCurvePoints);
  save_pr_curve(save_dir + "/PR_curve.png", px, apc.pr_curve, ap50, labels, with_pred);
  save_mc_curve(save_dir + "/F1_curve.png", px, apc.f1_curve, labels, "F1");
  save_mc_curve(save_dir + "/P_curve.png", px, apc.p_curve, labels, "Precision");
  save_mc_curve(save_dir + "/R_curve.png", px, apc.r_curve, labels, "Recall");
}

}  // namespace yolo11::metrics
