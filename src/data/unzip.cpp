// Zip datasets (see unzip.h). libzip reads the archive; every entry name is checked before anything is written.
#include "yolo11/data/unzip.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <vector>

#include <unistd.h>

#if YOLO11_HAS_LIBZIP
#include <zip.h>
#endif

namespace yolo11::data {
namespace fs = std::filesystem;

bool has_zip_support() { return YOLO11_HAS_LIBZIP != 0; }

#if YOLO11_HAS_LIBZIP
namespace {

struct Entry {
  zip_uint64_t index;
  std::string name;  // as stored, '/'-separated
  bool dir;
  zip_uint64_t size;
};

// Entry names that would write outside the target: absolute, drive-lettered, '..' components, backslashes.
std::string unsafe_reason(const std::string& n) {
  if (n.empty()) return "empty name";
  if (n[0] == '/' || n[0] == '\\') return "absolute path";
  if (n.size() >= 2 && n[1] == ':') return "drive path";
  if (n.find('\\') != std::string::npos) return "backslash in path";
  size_t b = 0;
  while (b <= n.size()) {
    const size_t e = std::min(n.find('/', b), n.size());
    if (n.compare(b, e - b, "..") == 0 && e - b == 2) return "'..' component";
    // "ds//x": the part after the top directory would be "/x", an absolute path once the top is stripped
    if (e == b && e < n.size()) return "empty path component ('//')";
    b = e + 1;
  }
  return "";
}

std::string zip_stamp(const std::string& p) {
  std::error_code ec;
  return std::to_string(fs::file_size(p, ec)) + " " +
         std::to_string(fs::last_write_time(p, ec).time_since_epoch().count());
}

std::string find_yaml(const fs::path& dir, const std::string& zip_path) {
  std::vector<fs::path> yamls;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const auto ext = e.path().extension().string();
    if (e.is_regular_file() && (ext == ".yaml" || ext == ".yml")) yamls.push_back(e.path());
  }
  std::sort(yamls.begin(), yamls.end());
  if (yamls.size() == 1) return yamls[0].string();
  const std::string stem = fs::path(zip_path).stem().string();
  for (const auto& y : yamls)
    if (y.stem().string() == stem) return y.string();
  if (yamls.empty())
    throw std::runtime_error(zip_path + " holds no dataset YAML (*.yaml) after unpacking into " + dir.string() +
                             "; add one (path/train/val/names) or pass data=<yaml>");
  std::string list;
  for (const auto& y : yamls) list += "\n  " + y.string();
  throw std::runtime_error(zip_path + " holds several YAML files and none is named " + stem + ".yaml; pass data= one of:" +
                           list);
}

}  // namespace

std::string unpack_dataset_zip(const std::string& zip_path, const std::string& datasets_dir) {
  int err = 0;
  zip_t* z = zip_open(zip_path.c_str(), ZIP_RDONLY, &err);
  if (!z) {
    zip_error_t ze;
    zip_error_init_with_code(&ze, err);
    const std::string why = zip_error_strerror(&ze);
    zip_error_fini(&ze);
    throw std::runtime_error("data=" + zip_path + " cannot be opened as a zip dataset: " + why);
  }
  struct Closer {
    zip_t* z;
    ~Closer() { zip_discard(z); }
  } closer{z};

  // ---- list and check every entry before writing anything --------------------------------------------------------
  std::vector<Entry> entries;
  std::set<std::string> tops;
  zip_uint64_t total = 0;
  const zip_int64_t n = zip_get_num_entries(z, 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    zip_stat_t st;
    if (zip_stat_index(z, static_cast<zip_uint64_t>(i), 0, &st) != 0 || !(st.valid & ZIP_STAT_NAME))
      throw std::runtime_error(zip_path + ": entry " + std::to_string(i) + " cannot be read: " + zip_strerror(z));
    const std::string name = st.name;
    if (const std::string why = unsafe_reason(name); !why.empty())
      throw std::runtime_error(zip_path + ": entry '" + name + "' is unsafe (" + why +
                               "): it would be written outside " + datasets_dir + "; nothing was unpacked");
    zip_uint8_t os = 0;
    zip_uint32_t attr = 0;
    if (zip_file_get_external_attributes(z, static_cast<zip_uint64_t>(i), 0, &os, &attr) == 0 &&
        os == ZIP_OPSYS_UNIX && ((attr >> 16) & 0170000) == 0120000)
      throw std::runtime_error(zip_path + ": entry '" + name + "' is a symbolic link; links are not unpacked (they can "
                               "point outside the dataset); nothing was unpacked");
    const bool dir = name.back() == '/';
    if (name.rfind("__MACOSX/", 0) == 0) continue;  // macOS resource forks: not dataset content
    entries.push_back({static_cast<zip_uint64_t>(i), name, dir, (st.valid & ZIP_STAT_SIZE) ? st.size : 0});
    total += entries.back().size;
    tops.insert(name.substr(0, name.find('/')));
  }
  if (entries.empty()) throw std::runtime_error(zip_path + " is an empty zip; nothing to train on");
  // One top-level directory → keep it; otherwise unpack under <datasets_dir>/<zip stem>.
  const bool one_top = tops.size() == 1 && entries.front().name.find('/') != std::string::npos;
  const fs::path root = fs::path(datasets_dir);
  const fs::path target = one_top ? root / *tops.begin() : root / fs::path(zip_path).stem();
  const fs::path marker = target / ".yolo11-unzipped";
  const std::string stamp = fs::absolute(zip_path).string() + " " + zip_stamp(zip_path);
  std::error_code ec;
  if (fs::exists(marker, ec)) {
    std::ifstream m(marker);
    std::string seen;
    std::getline(m, seen);
    if (seen == stamp) return find_yaml(target, zip_path);
  }
  if (fs::exists(target, ec) && !fs::exists(marker, ec))
    throw std::runtime_error(zip_path + " would be unpacked into " + target.string() +
                             ", which exists and was not unpacked from it; move it away or pass data=<its yaml>");
  fs::create_directories(root);
  const auto space = fs::space(root, ec);
  if (!ec && static_cast<double>(total) * 1.1 > static_cast<double>(space.available))
    throw std::runtime_error(zip_path + " unpacks to " + std::to_string(total / 1000000) + " MB but " + root.string() +
                             " has " + std::to_string(space.available / 1000000) + " MB free (10 % margin); free space "
                             "or set datasets_dir=");

  // ---- unpack into a temporary sibling, then rename into place -----------------------------------------------------
  const fs::path tmp = root / (".tmp-" + target.filename().string() + "-" + std::to_string(::getpid()));
  fs::remove_all(tmp, ec);
  spdlog::info("Unzipping {} ({} entries, {:.1f} MB) to {}", zip_path, entries.size(), total / 1e6, target.string());
  try {
    std::vector<char> buf(1 << 20);
    for (const auto& e : entries) {
      const std::string rel = one_top ? e.name.substr(e.name.find('/') + 1) : e.name;
      if (fs::path(rel).has_root_path())  // unsafe_reason rules this out; never write outside tmp
        throw std::runtime_error(zip_path + ": entry '" + e.name + "' would be written outside " + datasets_dir);
      const fs::path out = tmp / rel;
      if (e.dir || rel.empty()) {
        fs::create_directories(out);
        continue;
      }
      fs::create_directories(out.parent_path());
      zip_file_t* f = zip_fopen_index(z, e.index, 0);
      if (!f) throw std::runtime_error(zip_path + ": cannot read entry '" + e.name + "': " + zip_strerror(z));
      std::ofstream o(out, std::ios::binary);
      zip_int64_t got = 0;
      zip_uint64_t written = 0;
      while ((got = zip_fread(f, buf.data(), buf.size())) > 0) {
        o.write(buf.data(), got);
        written += static_cast<zip_uint64_t>(got);
      }
      zip_fclose(f);
      if (got < 0 || !o || written != e.size)
        throw std::runtime_error(zip_path + ": entry '" + e.name + "' is corrupt or truncated (" +
                                 std::to_string(written) + " of " + std::to_string(e.size) + " bytes)");
    }
    std::ofstream(tmp / ".yolo11-unzipped") << stamp << "\n";
    fs::remove_all(target, ec);  // only an earlier unpack of this zip (checked above)
    fs::rename(tmp, target);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  return find_yaml(target, zip_path);
}
#else
std::string unpack_dataset_zip(const std::string& zip_path, const std::string&) {
  throw std::runtime_error("data=" + zip_path + " is a zip dataset but this build has no zip support (libzip-dev was "
                           "missing at configure time); unzip it and pass data=<its yaml>, or install libzip-dev and "
                           "rebuild");
}
#endif

}  // namespace yolo11::data
