#pragma once
// The entry points' command-line parsing (src/cli/*.cpp): CLI11, with its errors on stderr in the spelling the user
// typed. Under `yolo11 MODE key=value` (argv[0] "yolo11 MODE", src/cli/dispatch.cpp) the options the front end made
// of the keys are named back as keys: "train=abc: not an integer", not CLI11's "Could not convert: --train = abc".
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <exception>
#include <regex>
#include <string>

namespace yolo11::cli {

/// `message` of CLI11 about the options of `app` in the key=value spelling: "--max-objects" → "max_objects=".
inline std::string key_spelling(const CLI::App& app, const std::string& message) {
  static const std::regex convert(R"(Could not convert: --([A-Za-z][\w-]*) = (.*))");
  static const std::regex required(R"(--([A-Za-z][\w-]*) is required)");
  static const std::regex option(R"(--([A-Za-z][\w-]*))");
  auto key = [](std::string name) {
    for (auto& ch : name)
      if (ch == '-') ch = '_';
    return name;
  };
  std::smatch m;
  if (std::regex_search(message, m, convert)) {
    const CLI::Option* o = app.get_option_no_throw("--" + m[1].str());
    const std::string type = o != nullptr ? o->get_type_name() : "";
    const char* what = type.find("INT") != std::string::npos     ? "not an integer"
                       : type.find("FLOAT") != std::string::npos ? "not a number"
                                                                 : "not a valid value";
    return key(m[1].str()) + "=" + m[2].str() + ": " + what;
  }
  if (std::regex_search(message, m, required)) {
    const std::string k = key(m[1].str());
    return k + "= is required: pass " + k + "=" + (k == "weights" || k == "data" || k == "source" ? "PATH" : "VALUE");
  }
  std::string out;  // any other message: each --option named as its key
  auto it = message.cbegin();
  for (std::sregex_iterator r(message.begin(), message.end(), option), end; r != end; ++r) {
    out.append(it, (*r)[0].first);
    out += key((*r)[1].str()) + "=";
    it = (*r)[0].second;
  }
  return out.append(it, message.cend());
}

/// Parses argv into `app`: -1 when parsing succeeded (go on), else the exit code to return: 0 after --help (printed
/// on stdout), 2 after a usage error printed on stderr as "PROGRAM: message" (key=value spelling under `yolo11`).
inline int parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return -1;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    const std::string program = argc > 0 ? argv[0] : "yolo11";
    const bool keys = program.rfind("yolo11 ", 0) == 0;  // `yolo11 MODE key=value`
    std::fflush(stdout);
    std::fprintf(stderr, "%s: %s (%s)\n", program.c_str(), keys ? key_spelling(app, e.what()).c_str() : e.what(),
                 keys ? ("yolo11 help " + program.substr(7) + " lists the keys").c_str() : "--help lists the options");
    return 2;
  }
}

/// The entry points' report of an error that ends the command: "PROGRAM: message" on stderr (PROGRAM as the user
/// ran it: "yolo11 MODE" under the front end, else the executable's name; not repeated when the message starts with
/// it). Returns exit code 1.
inline int fail(const char* argv0, const std::exception& e) {
  std::string program = argv0 != nullptr ? argv0 : "yolo11";
  if (program.rfind("yolo11 ", 0) != 0) program = program.substr(program.find_last_of('/') + 1);
  std::string message = e.what();
  if (message.rfind(program + ":", 0) != 0) message = program + ": " + message;
  spdlog::error("{}", message);
  return 1;
}

}  // namespace yolo11::cli
