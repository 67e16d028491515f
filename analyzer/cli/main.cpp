// `ringside`: analyze | watch | fleet | synth | report | diff | export | run.  Exit codes:
// 0 healthy, 1 findings, 2 usage or input error (messages on stderr).
#include <malloc.h>

#include <exception>
#include <iostream>

#include "cli/commands.h"
#include "ringside/safe_text.h"
#include "ringside/trace_writer.h"
#include "ringside/version.h"
#include "probe/launcher/run_command.h"

namespace {

int run(int argc, char** argv) {
  // HDF5 callocs a ~1 MiB conversion buffer per read; keep freed memory in the
  // process instead of returning it to the kernel and faulting it in again.
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  CLI::App app{
      "ringside: find the rank, GPU, node or link slowing or hanging a distributed GPU job"};
  app.set_version_flag("--version", ringside::version_text("ringside"));
  app.require_subcommand(1);
  int exit_code = 0;
  ringside::analysis::cli::add_analyze_command(app, exit_code);
  ringside::analysis::cli::add_synth_command(app, exit_code);
  ringside::analysis::cli::add_watch_command(app, exit_code);
  ringside::analysis::cli::add_fleet_command(app, exit_code);
  ringside::analysis::cli::add_report_command(app, exit_code);
  ringside::analysis::cli::add_diff_command(app, exit_code);
  ringside::analysis::cli::add_export_command(app, exit_code);
  ringside::launcher::add_run_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Help and version are successes; everything else is a usage error.
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  } catch (const ringside::analysis::cli::InputError& e) {
    std::cerr << "ringside: error: " << ringside::printable(e.what(), true) << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "ringside: error: " << ringside::printable(e.what(), true) << "\n";
    return 2;
  }
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  // Every file the commands open is closed when they return: HDF5's own shutdown at exit
  // is then only the one after a damaged file, which prints an alarm of its internals
  // (TraceWriter::end_library).
  const auto owns_hdf5 = ringside::trace::TraceWriter::initialize_library();
  const int rc = run(argc, argv);
  if (owns_hdf5.ok() && owns_hdf5.value()) ringside::trace::TraceWriter::end_library();
  return rc;
}
