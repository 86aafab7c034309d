#include "lpdt/graph/export.h"

#include <ATen/ATen.h>

#include <cstdio>
#include <sstream>
#include <type_traits>
#include <vector>

#include "lpdt/core/string_literal.h"
#include "lpdt/graph/periodic_schedule.h"
#include "lpdt/graph/spectral.h"
#include "lpdt/graph/topology.h"

namespace lpdt::graph {
namespace {

// printf-style number formatting: locale-independent and identical across standard libraries.
std::string number(double value, const char* format = "%.17g") {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), format, value);
  return buffer;
}

std::string dot_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

template <typename T>
std::string json_list(const std::vector<T>& values) {
  std::string out = "[";
  for (std::size_t k = 0; k < values.size(); ++k) {
    if (k) out += ", ";
    if constexpr (std::is_floating_point_v<T>) {
      out += number(values[k]);
    } else {
      out += std::to_string(values[k]);
    }
  }
  return out + "]";
}

std::string ids(const std::vector<std::int64_t>& nodes) {
  std::string out;
  for (const std::int64_t v : nodes) {
    if (!out.empty()) out += ' ';
    out += std::to_string(v);
  }
  return out.empty() ? "-" : out;
}

std::string spectral_json(const SpectralInfo& info, const std::string& indent) {
  return indent + "\"spectral_gap\": " + number(info.spectral_gap) + ",\n" + indent +
         "\"lambda2_modulus\": " + number(info.lambda2_modulus) + ",\n" + indent +
         "\"sigma2\": " + (info.sigma2 ? number(*info.sigma2) : std::string("null")) + ",\n";
}

// The members of one topology's JSON object, each line prefixed with `indent`.
// spectral: t's spectral_info when the caller has it, else computed here.
std::string topology_members(const Topology& t, const std::string& indent,
                             const SpectralInfo* spectral = nullptr) {
  const std::int64_t n = t.num_nodes();
  std::string out;
  out += indent + "\"name\": " + double_quoted_literal(t.name()) + ",\n";
  out += indent + "\"label\": " + double_quoted_literal(t.label()) + ",\n";
  out += indent + "\"mixing\": " + double_quoted_literal(t.mixing()) + ",\n";
  out += indent + "\"num_nodes\": " + std::to_string(n) + ",\n";
  out += indent + "\"num_edges\": " + std::to_string(t.num_edges()) + ",\n";
  auto flag = [&](const char* key, bool value) {
    out += indent + "\"" + key + "\": " + (value ? "true" : "false") + ",\n";
  };
  flag("undirected", t.is_undirected());
  flag("doubly_stochastic", t.is_doubly_stochastic());
  flag("symmetric", t.is_symmetric());
  flag("strongly_connected", t.is_strongly_connected());
  out += spectral_json(spectral != nullptr ? *spectral : spectral_info(t), indent);
  out += indent + "\"nodes\": [\n";
  for (std::int64_t i = 0; i < n; ++i) {
    out += indent + "  {\"id\": " + std::to_string(i) +
           ", \"in_degree\": " + std::to_string(t.in_degree(i)) +
           ", \"out_degree\": " + std::to_string(t.out_degree(i)) +
           ", \"self_weight\": " + number(t.self_weight(i)) +
           ", \"in_neighbors\": " + json_list(t.in_neighbors(i)) +
           ", \"out_neighbors\": " + json_list(t.out_neighbors(i)) + "}" +
           (i + 1 < n ? ",\n" : "\n");
  }
  out += indent + "],\n";
  out += indent + "\"edges\": [\n";
  const std::vector<WeightedEdge> edges = t.edges();
  for (std::size_t k = 0; k < edges.size(); ++k) {
    out += indent + "  {\"src\": " + std::to_string(edges[k].src) +
           ", \"dst\": " + std::to_string(edges[k].dst) +
           ", \"weight\": " + number(edges[k].weight) + "}" + (k + 1 < edges.size() ? ",\n" : "\n");
  }
  out += indent + "],\n";
  out += indent + "\"mixing_matrix\": [\n";
  for (std::int64_t i = 0; i < n; ++i) {
    const auto row_begin = t.weights().begin() + i * n;
    out += indent + "  " + json_list(std::vector<double>(row_begin, row_begin + n)) +
           (i + 1 < n ? ",\n" : "\n");
  }
  out += indent + "]\n";
  return out;
}

// `w` row-major n x n, printed with 3 significant digits; exact zeros as '.'. Each value has a
// space before it: "%6.3g" fills all 6 characters for weights under 0.1 (0.0909).
std::string matrix_text(const std::vector<double>& w, std::int64_t n) {
  std::ostringstream os;
  os << "    ";
  for (std::int64_t j = 0; j < n; ++j) os << number(static_cast<double>(j), "%7.0f");
  os << "\n";
  for (std::int64_t i = 0; i < n; ++i) {
    os << number(static_cast<double>(i), "%4.0f");
    for (std::int64_t j = 0; j < n; ++j) {
      const double v = w[i * n + j];
      os << " " << (v == 0.0 ? std::string("     .") : number(v, "%6.3g"));
    }
    os << "\n";
  }
  return os.str();
}

std::string spectral_text(const SpectralInfo& info) {
  std::string out = number(info.spectral_gap, "%.6g") +
                    "  (1 - |lambda_2(W)|, |lambda_2| = " + number(info.lambda2_modulus, "%.6g");
  if (info.sigma2) out += ", sigma_2 = " + number(*info.sigma2, "%.6g");
  return out + ")";
}

}  // namespace

std::string to_dot(const Topology& t) {
  std::ostringstream os;
  os << "digraph " << dot_string(t.label()) << " {\n";
  os << "  // Arc j -> i carries weight W[i][j]; node labels give the self weight W[i][i].\n";
  for (std::int64_t i = 0; i < t.num_nodes(); ++i) {
    os << "  " << i << " [label=\"" << i << "\\nself " << number(t.self_weight(i), "%.6g")
       << "\"];\n";
  }
  for (const WeightedEdge& e : t.edges()) {
    os << "  " << e.src << " -> " << e.dst << " [label=\"" << number(e.weight, "%.6g") << "\"];\n";
  }
  os << "}\n";
  return os.str();
}

std::string to_dot(const TopologySchedule& schedule) {
  if (schedule.is_static()) return to_dot(schedule.at(0));
  std::ostringstream os;
  os << "digraph " << dot_string(schedule.label()) << " {\n";
  os << "  // Union over one period of " << schedule.period()
     << " steps; arc j -> i labelled \"t=s: w\" carries W_s[i][j] at steps s mod period.\n";
  for (std::int64_t i = 0; i < schedule.num_nodes(); ++i) os << "  " << i << ";\n";
  for (std::int64_t s = 0; s < schedule.period(); ++s) {
    for (const WeightedEdge& e : schedule.at(s).edges()) {
      os << "  " << e.src << " -> " << e.dst << " [label=\"t=" << s << ": "
         << number(e.weight, "%.6g") << "\"];\n";
    }
  }
  os << "}\n";
  return os.str();
}

std::string to_json(const Topology& t) {
  return "{\n  \"period\": 1,\n" + topology_members(t, "  ") + "}\n";
}

std::string to_json(const TopologySchedule& schedule) {
  return to_json(schedule, spectral_info(schedule));
}

std::string to_json(const TopologySchedule& schedule, const SpectralInfo& spectral) {
  if (schedule.is_static()) {
    return "{\n  \"period\": 1,\n" + topology_members(schedule.at(0), "  ", &spectral) + "}\n";
  }
  std::string out = "{\n";
  out += "  \"name\": " + double_quoted_literal(schedule.name()) + ",\n";
  out += "  \"label\": " + double_quoted_literal(schedule.label()) + ",\n";
  out += "  \"num_nodes\": " + std::to_string(schedule.num_nodes()) + ",\n";
  out += "  \"period\": " + std::to_string(schedule.period()) + ",\n";
  // The gap of the product over one period, W_{p-1} ... W_0.
  out += spectral_json(spectral, "  ");
  out += "  \"steps\": [\n";
  for (std::int64_t s = 0; s < schedule.period(); ++s) {
    out += "    {\n" + topology_members(schedule.at(s), "      ") + "    }" +
           (s + 1 < schedule.period() ? ",\n" : "\n");
  }
  out += "  ]\n}\n";
  return out;
}

std::string describe(const Topology& t) {
  const std::int64_t n = t.num_nodes();
  std::ostringstream os;
  os << "topology: " << t.label() << " [" << t.name() << "], " << n << " node"
     << (n == 1 ? "" : "s") << ", mixing " << t.mixing() << "\n";
  os << "edges: " << t.num_edges() << " directed";
  if (t.is_undirected()) os << " (" << t.num_edges() / 2 << " undirected links)";
  os << "; " << (t.is_undirected() ? "undirected" : "directed") << ", "
     << (t.is_regular() ? "regular" : "irregular") << ", "
     << (t.is_doubly_stochastic() ? "doubly stochastic" : "column-stochastic only (needs push-sum)")
     << (t.is_symmetric() ? ", symmetric" : "") << "\n";
  os << "spectral gap: " << spectral_text(spectral_info(t)) << "\n";
  os << "node   in  out    self  in-neighbours | out-neighbours\n";
  for (std::int64_t i = 0; i < n; ++i) {
    os << number(static_cast<double>(i), "%4.0f") << " "
       << number(static_cast<double>(t.in_degree(i)), "%4.0f") << " "
       << number(static_cast<double>(t.out_degree(i)), "%4.0f") << " "
       << number(t.self_weight(i), "%7.4g") << "  " << ids(t.in_neighbors(i)) << " | "
       << ids(t.out_neighbors(i)) << "\n";
  }
  if (n <= kDescribeMatrixMaxNodes) {
    os << "mixing matrix W (W[i][j]: weight node i gives to node j's message; columns sum to 1):\n"
       << matrix_text(t.weights(), n);
  }
  return os.str();
}

std::string describe(const TopologySchedule& schedule) {
  if (schedule.is_static()) return describe(schedule.at(0));
  const std::int64_t n = schedule.num_nodes();
  std::ostringstream os;
  os << "topology: " << schedule.label() << " [" << schedule.name() << "], " << n
     << " nodes, time-varying with period " << schedule.period() << "\n";
  os << "spectral gap of the period product W_" << schedule.period() - 1
     << " ... W_0: " << spectral_text(spectral_info(schedule)) << "\n";
  for (std::int64_t s = 0; s < schedule.period(); ++s) {
    const Topology& t = schedule.at(s);
    os << "step " << s << " (" << t.label() << "), mixing " << t.mixing() << ":";
    for (const WeightedEdge& e : t.edges()) {
      os << " " << e.src << "->" << e.dst;
    }
    os << "\n";
  }
  if (n <= kDescribeMatrixMaxNodes) {
    const at::Tensor product = period_product(schedule).contiguous();
    const double* data = product.data_ptr<double>();
    os << "period product W_" << schedule.period() - 1 << " ... W_0:\n"
       << matrix_text(std::vector<double>(data, data + n * n), n);
  }
  return os.str();
}

}  // namespace lpdt::graph
