#pragma once
// The fuzz entries: one function per parser of a user-supplied file, taking the file's raw bytes. The libFuzzer
// targets (fuzz/targets/<name>.cpp, built by fuzz/CMakeLists.txt with clang) and the gcc test suite's replay of the
// seeds and regression inputs (tests/fuzz/test_fuzz_replay.cpp) call the same functions.
//
// Each entry writes the bytes where the parser reads them (a file in a per-process scratch directory, or a loopback
// TCP connection for /metrics), calls the parser, and returns normally when the parser accepts the input or rejects it
// with the std::runtime_error its header promises. Anything else is a finding: a crash, a sanitizer report, an
// exception of another type escaping, or a yolo11::fuzz::Finding thrown by an entry's own check (a rejection that
// does not name the file, an accepted value outside its documented range, a config that does not load back from the
// args.yaml it writes).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ATen/ATen.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "yolo11/config/train_config.h"
#include "yolo11/data/dataset_info.h"
#include "yolo11/data/labels.h"
#include "yolo11/data/unzip.h"
#include "yolo11/io/metrics_server.h"
#include "yolo11/io/pickle.h"
#include "yolo11/io/pt_checkpoint.h"
#include "yolo11/io/safetensors.h"

namespace yolo11::fuzz {

namespace fs = std::filesystem;

/// An entry's own check failed (the message says which and how).
struct Finding : std::logic_error {
  using std::logic_error::logic_error;
};

/// The entries, by target name (fuzz/targets/<name>.cpp, the corpus directories fuzz/seeds/<name>, the regression
/// directories fuzz/regressions/<name>).
inline const std::vector<std::string>& target_names() {
  static const std::vector<std::string> names{"labels", "list_file", "dataset_yaml", "config_kv", "config_yaml",
                                              "safetensors", "zip", "pickle", "pt", "metrics_http"};
  return names;
}

namespace detail {

/// A per-process scratch directory under the temp dir (removed by nobody: a few small files).
inline const fs::path& scratch() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("yolo11-fuzz-" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

inline std::string put(const fs::path& path, std::string_view data) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!out.flush()) throw std::logic_error("fuzz: cannot write " + path.string());
  return path.string();
}

/// A rejection must name the file it rejects (the user has to find it).
inline void expect_names(const std::exception& e, const std::string& path, const char* what) {
  if (std::string(e.what()).find(path) == std::string::npos)
    throw Finding(std::string(what) + ": the error does not name the file " + path + ": " + e.what());
}

}  // namespace detail

/// A YOLO label file (labels/x.txt) parsed with nc = 80: data::parse_label_file. A rejection names file:line; an
/// accepted row has a class < nc and finite coordinates in [0, 1].
inline void labels(std::string_view data) {
  const std::string path = detail::put(detail::scratch() / "labels" / "x.txt", data);
  const data::LabelParse r = data::parse_label_file(path, 80);
  if (!r.ok && r.error.find(path) == std::string::npos)
    throw Finding("labels: the error does not name the file: " + r.error);
  for (const auto& row : r.rows) {
    if (row.cls < 0 || row.cls >= 80) throw Finding("labels: accepted class " + std::to_string(row.cls));
    for (const float v : row.xywhn)
      if (!std::isfinite(v) || v < 0.f || v > 1.f) throw Finding("labels: accepted coordinate " + std::to_string(v));
  }
}

/// An image list file (train: list.txt): data::list_images. The list's directory holds images/a.jpg and b.png, so
/// relative lines can name existing files. Every listed path exists and is an image file.
inline void list_file(std::string_view data) {
  const fs::path dir = detail::scratch() / "list";
  if (!fs::exists(dir / "b.png")) {
    detail::put(dir / "images" / "a.jpg", "");
    detail::put(dir / "b.png", "");
  }
  const std::string path = detail::put(dir / "list.txt", data);
  data::ListReport report;
  for (const auto& f : data::list_images(path, &report))
    if (!fs::is_regular_file(f) || !data::is_image_file(f)) throw Finding("list_file: listed " + f);
}

/// A dataset YAML (data=x.yaml) beside an images/ folder: data::load_dataset_yaml with the datasets dir in the scratch
/// directory. A rejection names the YAML; an accepted one has nc == names.size() > 0 and a train and a val source.
inline void dataset_yaml(std::string_view data) {
  const fs::path dir = detail::scratch() / "dataset";
  fs::create_directories(dir / "images" / "train");
  const std::string path = detail::put(dir / "data.yaml", data);
  data::DatasetInfo info;
  try {
    info = data::load_dataset_yaml(path, (detail::scratch() / "datasets").string());
  } catch (const std::runtime_error& e) {
    detail::expect_names(e, "data.yaml", "dataset_yaml");
    return;
  }
  if (info.nc <= 0 || static_cast<size_t>(info.nc) != info.names.size() || info.train.empty() || info.val.empty())
    throw Finding("dataset_yaml: accepted nc " + std::to_string(info.nc) + " with " +
                  std::to_string(info.names.size()) + " names");
}

namespace detail {
/// The args.yaml a run writes must load back to the same config (resume reads it).
inline void expect_round_trip(const config::TrainConfig& c, const char* what) {
  const std::string yaml = c.to_yaml();
  const std::string path = put(scratch() / "args.yaml", yaml);
  config::TrainConfig back;
  try {
    back = config::TrainConfig::load(path, {});
  } catch (const std::runtime_error& e) {
    throw Finding(std::string(what) + ": the args.yaml of an accepted config does not load: " + e.what() +
                  "\n--- args.yaml\n" + yaml);
  }
  if (back.to_yaml() != yaml)
    throw Finding(std::string(what) + ": args.yaml loads back to another config\n--- written\n" + yaml +
                  "--- read back\n" + back.to_yaml());
}
}  // namespace detail

/// Command-line overrides (one key=value per line of the input) over configs/default.yaml: TrainConfig::load. An
/// accepted config round-trips through args.yaml.
inline void config_kv(std::string_view data) {
  std::vector<std::string> overrides;
  size_t b = 0;
  while (b <= data.size()) {
    const size_t e = std::min(data.find('\n', b), data.size());
    overrides.emplace_back(data.substr(b, e - b));
    b = e + 1;
  }
  config::TrainConfig c;
  try {
    c = config::TrainConfig::load("", overrides);
  } catch (const std::runtime_error&) {
    return;
  }
  detail::expect_round_trip(c, "config_kv");
}

/// A config file (cfg=FILE) over configs/default.yaml: TrainConfig::load. A rejection names the file; an accepted
/// config round-trips through args.yaml.
inline void config_yaml(std::string_view data) {
  const std::string path = detail::put(detail::scratch() / "cfg.yaml", data);
  config::TrainConfig c;
  try {
    c = config::TrainConfig::load(path, {});
  } catch (const std::runtime_error& e) {
    detail::expect_names(e, path, "config_yaml");
    return;
  }
  detail::expect_round_trip(c, "config_yaml");
}

/// A safetensors weights file: io::read_safetensors_metadata, then io::load_safetensors. Rejections name the file;
/// a file load_safetensors accepts passes the metadata check too.
inline void safetensors(std::string_view data) {
  const std::string path = detail::put(detail::scratch() / "x.safetensors", data);
  bool meta_ok = true;
  try {
    io::read_safetensors_metadata(path);
  } catch (const std::runtime_error& e) {
    detail::expect_names(e, path, "safetensors metadata");
    meta_ok = false;
  }
  try {
    io::load_safetensors(path);
  } catch (const std::runtime_error& e) {
    detail::expect_names(e, path, "safetensors");
    return;
  }
  if (!meta_ok) throw Finding("safetensors: load_safetensors accepts a file read_safetensors_metadata rejects");
}

/// A zip dataset (data=ds.zip): data::unpack_dataset_zip into a datasets dir that is emptied after each input.
/// A rejection names the zip; an accepted zip yields a YAML inside the datasets dir.
inline void zip(std::string_view data) {
  const std::string path = detail::put(detail::scratch() / "zip" / "ds.zip", data);
  const fs::path out = detail::scratch() / "zip-datasets";
  std::error_code ec;
  fs::remove_all(out, ec);
  fs::create_directories(out);
  std::string yaml;
  try {
    yaml = data::unpack_dataset_zip(path, out.string());
  } catch (const std::runtime_error& e) {
    detail::expect_names(e, path, "zip");
    fs::remove_all(out, ec);
    return;
  }
  const std::string rel = fs::path(yaml).lexically_relative(out).string();
  fs::remove_all(out, ec);
  if (rel.empty() || *fs::path(rel).begin() == "..") throw Finding("zip: the YAML " + yaml + " is outside " + out.string());
}

/// A pickle stream (a .pt's data.pkl) with torch's persistent ids ('storage', <class>, key, location, numel) resolved
/// to zero-filled storages of up to 2^20 elements: io::pickle::unpickle. Rejections name the source.
inline void pickle(std::string_view data) {
  const std::string what = "fuzz.pkl";
  const io::pickle::PersistentLoad load = [&](const io::pickle::Value& pid) -> io::pickle::Ref {
    using K = io::pickle::Value::Kind;
    const auto& id = pid.items;
    if (!pid.is(K::Tuple) || id.size() < 5 || !id[1]->is(K::Global) || !id[4]->is(K::Int) || id[4]->i < 0 ||
        id[4]->i > (1 << 20))
      throw std::runtime_error(what + ": persistent id is not ('storage', <class>, key, location, numel)");
    auto v = std::make_shared<io::pickle::Value>();
    v->kind = K::Storage;
    try {
      v->dtype = io::pickle::storage_dtype(id[1]->s);
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(what + ": " + e.what());  // as io::read_pt_checkpoint names its file
    }
    v->tensor = at::zeros({id[4]->i * static_cast<int64_t>(c10::elementSize(v->dtype))}, at::kByte);
    return v;
  };
  try {
    io::pickle::unpickle(data, what, load);
  } catch (const std::runtime_error& e) {
    detail::expect_names(e, what, "pickle");
  }
}

/// A .pt checkpoint (model=x.pt, pretrained=x.pt): io::read_pt_checkpoint. Rejections name the file; an accepted
/// checkpoint has a non-empty state_dict and nc == names.size().
inline void pt(std::string_view data) {
  const std::string path = detail::put(detail::scratch() / "x.pt", data);
  io::PtCheckpoint ck;
  try {
    ck = io::read_pt_checkpoint(path);
  } catch (const std::runtime_error& e) {
    detail::expect_names(e, path, "pt");
    return;
  }
  if (ck.state_dict.empty() || ck.nc != static_cast<int64_t>(ck.names.size()))
    throw Finding("pt: accepted a checkpoint with " + std::to_string(ck.state_dict.size()) + " tensors, nc " +
                  std::to_string(ck.nc) + " and " + std::to_string(ck.names.size()) + " names");
}

namespace detail {

/// The /metrics server of this process (io::MetricsServer, as a run starts it) on the first free loopback port from
/// 20000 + pid % 20000.
inline int metrics_port() {
  static std::unique_ptr<io::MetricsServer> server;
  static const int port = [] {
    auto registry = std::make_shared<io::MetricsRegistry>();
    registry->declare("yolo11_fuzz_samples_total", io::MetricsRegistry::Type::counter, "fuzz");
    registry->set("yolo11_fuzz_samples_total", "rank=\"0\"", 1);
    for (int k = 0; k < 500; ++k) {
      const int p = 20000 + (static_cast<int>(::getpid()) + k) % 20000;
      try {
        server = std::make_unique<io::MetricsServer>(registry, "127.0.0.1", p);
        return p;
      } catch (const std::runtime_error&) {
      }
    }
    throw std::logic_error("metrics_http: no free loopback port for the /metrics server");
  }();
  return port;
}

/// True when `reply` holds a whole response: its headers and a Content-Length body (the server's answers all have one).
inline bool response_complete(const std::string& reply) {
  const size_t end = reply.find("\r\n\r\n");
  if (end == std::string::npos) return false;
  const size_t cl = reply.find("Content-Length: ");
  if (cl == std::string::npos || cl > end) return false;
  return reply.size() - (end + 4) >= std::strtoull(reply.c_str() + cl + 16, nullptr, 10);
}

/// Sends `request` on a fresh connection and returns what the server answers: everything until it closes, until one
/// whole response has come, or until it has been silent for `idle_ms` (a request still incomplete, or a kept-alive connection after its answer). The
/// connection is not half-closed (cpp-httplib then takes the client for gone and answers nothing) but reset at the
/// end, so the server's thread is free at once. Throws Finding when the server no longer accepts connections.
inline std::string http_exchange(std::string_view request, int idle_ms) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::logic_error("metrics_http: socket() failed");
  struct Closer {
    int fd;
    ~Closer() {
      linger l{1, 0};  // close with RST: no TIME_WAIT pile-up over millions of connections
      ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
      ::close(fd);
    }
  } closer{fd};
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(metrics_port()));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    throw Finding("metrics_http: the /metrics server no longer accepts connections: " + std::string(strerror(errno)));
  for (size_t sent = 0; sent < request.size();) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server closed early (it may reject a request before reading all of it)
    sent += static_cast<size_t>(n);
  }
  std::string reply;
  char buf[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, idle_ms) <= 0) break;  // silent for idle_ms
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;  // closed (or reset)
    reply.append(buf, static_cast<size_t>(n));
    if (response_complete(reply)) break;
  }
  return reply;
}

}  // namespace detail

/// Raw bytes on a TCP connection to a live io::MetricsServer (the request line, headers and body go through
/// cpp-httplib's request parsing, its routing and the server's handlers): every answer is an HTTP/1.x response, and
/// the server still serves GET /metrics after every 64th input (within 10 s).
inline void metrics_http(std::string_view data) {
  const std::string reply = detail::http_exchange(data, 50);
  if (!reply.empty() && reply.rfind("HTTP/1.", 0) != 0)
    throw Finding("metrics_http: the answer is not an HTTP response: " + reply.substr(0, 80));
  static int64_t n = 0;
  if (++n % 64 == 0) {
    const std::string ok =
        detail::http_exchange("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 10000);
    if (ok.rfind("HTTP/1.1 200", 0) != 0 || ok.find("yolo11_fuzz_samples_total") == std::string::npos)
      throw Finding("metrics_http: GET /metrics fails after fuzz input: " + ok.substr(0, 200));
  }
}

/// The entry named `name` (see target_names()); throws std::invalid_argument for another name.
inline void (*entry(const std::string& name))(std::string_view) {
  if (name == "labels") return labels;
  if (name == "list_file") return list_file;
  if (name == "dataset_yaml") return dataset_yaml;
  if (name == "config_kv") return config_kv;
  if (name == "config_yaml") return config_yaml;
  if (name == "safetensors") return safetensors;
  if (name == "zip") return zip;
  if (name == "pickle") return pickle;
  if (name == "pt") return pt;
  if (name == "metrics_http") return metrics_http;
  throw std::invalid_argument("fuzz: no entry named " + name);
}

}  // namespace yolo11::fuzz
