#pragma once
// `lpdt report DIR` (docs/reports.md): one self-contained HTML page (inline CSS and SVG, no
// scripts, no external resources) with the plots of a run folder or of a sweep folder.
#include <filesystem>
#include <optional>
#include <string>

#include "lpdt/exp/report/run_results.h"

namespace lpdt::exp::report {

// The page of one run: header (configuration, final accuracies, seed, revision, backend),
// accuracy per epoch (a thin line per node, the averaged model thick), bytes sent per node,
// consensus distance, class distribution per node (the paper's Figure 2), the topology, and
// memory and energy per precision from cost.json (Figure 7). A missing optional file leaves a
// note in place of its section.
std::string run_report_html(const RunResults& run);

// The page of a sweep: accuracy against skew (Figure 4: fp32 solid, int8 dashed, a colour per
// combination of the other varying keys, error bars of +-1 sample std over seeds), the sweep's
// tables, every run with a sparkline of its accuracy, the unfinished runs.
std::string sweep_report_html(const SweepResults& sweep);

// Writes the page of DIR (a run folder, else a sweep folder) to `out` (default DIR/report.html)
// and returns its path. UserError when DIR is neither, or a file in it is malformed.
std::filesystem::path write_report(const std::filesystem::path& dir,
                                   const std::optional<std::filesystem::path>& out = {});

}  // namespace lpdt::exp::report
