// lpdt: low precision decentralized training. The CLI is thin: it parses and calls exp/.
// Exit codes: 0 ok, 2 usage or configuration error, 1 runtime error.
#include <CLI/CLI.hpp>
#include <iostream>

#include "lpdt/cli/commands.h"
#include "lpdt/core/error.h"
#include "lpdt/dist/cluster.h"

namespace {

// Under mpirun: a configuration error is the same on every rank, so rank 0 alone reports it and
// every rank exits normally; any other error stops the whole job (no peer waits for this rank).
int fail(const char* kind, const std::exception& e, int code) {
  const int rank = lpdt::dist::job_rank();
  if (rank > 0 && code == 2) return code;
  std::cerr << "lpdt: " << (rank >= 0 ? "rank " + std::to_string(rank) + ": " : std::string())
            << kind << e.what() << "\n";
  if (code != 2) lpdt::dist::abort_job(code);
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lpdt: decentralized training on many peer-to-peer nodes that never share data"};
  app.require_subcommand(1);
  app.set_version_flag("--version", lpdt::cli::version_string());
  lpdt::cli::add_train_command(app);
  lpdt::cli::add_topo_command(app);
  lpdt::cli::add_bench_command(app);
  lpdt::cli::add_sweep_command(app);
  lpdt::cli::add_report_command(app);
  lpdt::cli::add_cost_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  } catch (const lpdt::ConfigError& e) {
    return fail("configuration error: ", e, 2);
  } catch (const lpdt::UserError& e) {
    return fail("error: ", e, 1);
  } catch (const std::exception& e) {
    return fail("", e, 1);
  }
  return lpdt::cli::exit_code();
}
