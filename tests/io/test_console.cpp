// The console of the yolo11 commands (include/yolo11/io/console.h): plain lines, "WARNING " before warnings, errors
// on stderr, lines never glued to a live \r progress line, and LibTorch's known notices filtered out while its other
// warnings still show.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cstdio>
#include <sstream>
#include <string>

#include "yolo11/io/console.h"

using namespace yolo11;

namespace {

std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  for (int c; (c = std::fgetc(f)) != EOF;) s += static_cast<char>(c);
  return s;
}

}  // namespace

TEST(Console, PlainLinesWarningsPrefixedErrorsOnTheErrorStream) {
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  ASSERT_TRUE(out && err);
  {
    spdlog::logger log("console_test", io::plain_sink(out, err, "[rank 1] ", /*console=*/false));
    log.info("columns {}", 3);
    log.warn("careful");
    log.error("broken: pass weights=PATH");
    log.flush();
  }
  EXPECT_EQ(contents(out), "[rank 1] columns 3\n[rank 1] WARNING careful\n");
  EXPECT_EQ(contents(err), "[rank 1] broken: pass weights=PATH\n");
  std::fclose(out);
  std::fclose(err);
}

TEST(Console, ALineLoggedWhileTheProgressLineIsLiveStartsOnItsOwnLine) {
  std::FILE* cap = std::tmpfile();
  ASSERT_TRUE(cap);
  std::fflush(stdout);
  const int saved = ::dup(STDOUT_FILENO);
  ::dup2(::fileno(cap), STDOUT_FILENO);
  {
    spdlog::logger log("progress_test", io::plain_sink(stdout, stdout));
    io::progress_update("  1/2: 50%");
    io::progress_update("  1/2: 100%");
    log.warn("a warning mid-epoch");
    io::progress_update("  1/2: 100%");
    io::progress_end();
    io::progress_end();  // nothing live: no empty line
    log.info("val table");
    log.flush();
  }
  std::fflush(stdout);
  ::dup2(saved, STDOUT_FILENO);
  ::close(saved);
  EXPECT_EQ(contents(cap), "\r  1/2: 50%\r  1/2: 100%\nWARNING a warning mid-epoch\n\r  1/2: 100%\nval table\n");
  std::fclose(cap);
}

TEST(Console, LibTorchNoticesAreFilteredAndItsOtherWarningsLogged) {
  EXPECT_TRUE(io::is_libtorch_notice("scatter_reduce() is in beta and the API may change at any time."));
  EXPECT_FALSE(io::is_libtorch_notice("index_reduce() is in beta and the API may change at any time."));
  io::setup_console();  // installs the warning handler on this thread
  std::ostringstream seen;
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(
      std::make_shared<spdlog::logger>("warnings_test", std::make_shared<spdlog::sinks::ostream_sink_mt>(seen)));
  const auto idx = torch::zeros({3}, torch::kLong);
  const auto r = torch::zeros({4}).scatter_reduce(0, idx, torch::ones({3}), "amax", /*include_self=*/true);
  EXPECT_EQ(r[0].item<float>(), 1.0f);
  TORCH_WARN("scatter_reduce() is in beta and the API may change at any time.");  // as LibTorch words it
  TORCH_WARN("a LibTorch warning the user should see");
  spdlog::set_default_logger(previous);
  EXPECT_EQ(seen.str().find("scatter_reduce"), std::string::npos) << seen.str();
  EXPECT_NE(seen.str().find("LibTorch: a LibTorch warning the user should see"), std::string::npos) << seen.str();
}
