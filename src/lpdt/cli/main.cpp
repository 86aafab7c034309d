// lpdt: low precision decentralized training. The CLI is thin: it parses and calls exp/.
// Exit codes: 0 ok, 2 usage or configuration error, 1 runtime error.
#include <c10/util/Exception.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <new>
#include <sstream>
#include <string>

#include "lpdt/cli/commands.h"
#include "lpdt/core/error.h"
#include "lpdt/dist/cluster.h"
#include "lpdt/exp/bench_stats.h"

namespace {

// Under mpirun: a configuration error, or an error the ranks agreed on (JobWideError), is the
// same on every rank, so rank 0 alone reports it and every rank exits normally; any other error
// stops the whole job (no peer waits for this rank).
int fail(const char* kind, const std::exception& e, int code, bool every_rank_alike = false) {
  const int rank = lpdt::dist::job_rank();
  const bool alike = every_rank_alike || code == 2;
  if (rank > 0 && alike) return code;
  std::cerr << "lpdt: " << (rank >= 0 ? "rank " + std::to_string(rank) + ": " : std::string())
            << kind << lpdt::printable_lines(e.what()) << "\n";
  if (!alike) lpdt::dist::abort_job(code);
  return code;
}

// LibTorch's errors carry its C++ frames, which say nothing to a user: its message alone, and for
// an allocation that failed, what to do about it.
std::string libtorch_message(const c10::Error& e) {
  const std::string message = e.what_without_backtrace();
  const std::string tried = "you tried to allocate ";
  if (message.find("can't allocate memory") == std::string::npos) return message;
  const auto at = message.find(tried);
  const std::string bytes =
      at == std::string::npos
          ? std::string("more memory")
          : message.substr(at + tried.size(),
                           message.find(' ', at + tried.size()) - (at + tried.size())) +
                " bytes";
  char peak[64];
  std::snprintf(peak, sizeof peak, "%.1f GiB", lpdt::exp::peak_resident_bytes() / (1u << 30));
  return "out of memory: one tensor needed " + bytes + " at once, with this process at a peak of " +
         peak + " resident before it; the sizes asked for (nodes, batch size, image size, "
         "sequence length: data.max_length) need more memory than this machine had free";
}

struct MessageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

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
  // A first word that is no subcommand: CLI11 would only say that one is required.
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({})) {
      known = known || sub->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      std::cerr << "lpdt: unknown subcommand '" << argv[1] << "' (expected one of " << names
                << "; lpdt --help lists them)" << std::endl;
      return 2;
    }
  }
  // Only train is a multi-process job: under mpirun every other command would run once per
  // process, side by side (a sweep's runs twice, benchmarks timing each other's load).
  // (lpdt --version and lpdt --help name no command: they only print, rank 0 alone, below.)
  if (argc > 1 && argv[1][0] != '-' && std::string(argv[1]) != "train" &&
      lpdt::dist::launched_by_mpirun()) {
    int processes = 1;
    for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
      if (const char* value = std::getenv(name)) processes = std::atoi(value);
    }
    bool sharded = false;
    bool help = false;  // help only prints (rank 0, below): nothing to refuse
    for (int i = 2; i < argc; ++i) {
      const std::string arg = argv[i];
      sharded = sharded || arg.starts_with("--shard");
      help = help || arg == "--help" || arg == "-h";
    }
    if (processes > 1 && !help && !(sharded && std::string(argv[1]) == "sweep")) {
      // One process says why: rank 0, and in an MPMD launch (`mpirun -np 1 lpdt train ... : -np 1
      // lpdt topo`) the first process of each program too, whose rank 0 may be another program
      // (Open MPI lists the programs' process counts in OMPI_APP_CTX_NUM_PROCS).
      const int rank = lpdt::dist::launcher_rank();
      bool first_of_its_program = rank <= 0;
      if (const char* counts = std::getenv("OMPI_APP_CTX_NUM_PROCS")) {
        std::istringstream in(counts);
        int first = 0;
        for (int count = 0; in >> count; first += count) {
          first_of_its_program = first_of_its_program || rank == first;
        }
      }
      if (first_of_its_program) {
        std::cerr << "lpdt: " << (rank > 0 ? "rank " + std::to_string(rank) + ": " : "")
                  << "lpdt " << argv[1] << " was started by mpirun as one of " << processes
                  << " processes, which would each do all of its work side by side: only lpdt "
                     "train runs as a multi-process job. Run it without mpirun"
                  << (std::string(argv[1]) == "sweep"
                          ? " (to share a sweep's runs out, give each process its own --shard "
                            "I/N)"
                          : "")
                  << std::endl;
      }
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version under mpirun: rank 0 prints them, not every rank (a parse error is
    // printed by the rank that has it: in an MPMD launch the ranks' arguments can differ).
    if (e.get_exit_code() == 0 && lpdt::dist::launcher_rank() > 0) return 0;
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  } catch (const lpdt::ConfigError& e) {
    return fail("configuration error: ", e, 2);
  } catch (const lpdt::JobWideError& e) {
    return fail("error: ", e, 1, /*every_rank_alike=*/true);
  } catch (const lpdt::UserError& e) {
    return fail("error: ", e, 1);
  } catch (const c10::Error& e) {
    return fail("", MessageError(libtorch_message(e)), 1);
  } catch (const std::bad_alloc&) {
    return fail("",
                MessageError("out of memory: the sizes asked for (nodes, batch size, image "
                             "size, sequence length, rows of a file) need more memory than "
                             "this machine has"),
                1);
  } catch (const std::exception& e) {
    return fail("", e, 1);
  }
  return lpdt::cli::exit_code();
}
