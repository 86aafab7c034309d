// lpdt: low precision decentralized training. The CLI is thin: it parses and calls exp/.
// Exit codes: 0 ok, 2 usage or configuration error, 1 runtime error.
#include <CLI/CLI.hpp>
#include <iostream>

#include "lpdt/cli/commands.h"
#include "lpdt/core/error.h"

int main(int argc, char** argv) {
  CLI::App app{"lpdt: decentralized training on many peer-to-peer nodes that never share data"};
  app.require_subcommand(1);
  app.set_version_flag("--version", lpdt::cli::version_string());
  lpdt::cli::add_train_command(app);
  lpdt::cli::add_topo_command(app);
  lpdt::cli::add_bench_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  } catch (const lpdt::ConfigError& e) {
    std::cerr << "lpdt: configuration error: " << e.what() << "\n";
    return 2;
  } catch (const lpdt::UserError& e) {
    std::cerr << "lpdt: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "lpdt: " << e.what() << "\n";
    return 1;
  }
  return lpdt::cli::exit_code();
}
