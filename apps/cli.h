#pragma once
// What the three apps share on the command line: CLI11 parsing with Ember's exit codes, and running a
// main body that maps exceptions to them:
//   0 success · 1 runtime failure (ember::Error and anything else) · 2 usage or config error (CLI11 parse
//   errors, ConfigError, and Device::parse rejecting --device).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <functional>

#include "apps/yaml_reader.h"
#include "base/device.h"

namespace ember::app {

// Parses argv; on --help prints it and returns 0, on a usage error prints it and returns 2; else -1.
inline int parse_cli(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  return -1;
}

// Runs `body`, printing "error: <message>" to stderr for an exception and returning its exit code.
inline int run_main(const std::function<int()>& body) {
  try {
    return body();
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

// Device::parse, with its error (unknown name, or a CUDA device this build or machine cannot serve) as a
// ConfigError that adds that --device cpu works.
Device parse_device(const std::string& text);

}  // namespace ember::app
