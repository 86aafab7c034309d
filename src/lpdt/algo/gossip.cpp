#include "lpdt/algo/gossip.h"

#include <sstream>

#include "lpdt/algo/choco.h"
#include "lpdt/algo/deep_squeeze.h"
#include "lpdt/algo/dpsgd.h"
#include "lpdt/core/error.h"

namespace lpdt::algo {

Algorithm parse_algorithm(std::string_view name) {
  if (name == "dpsgd" || name == "d-psgd") return Algorithm::kDpsgd;
  if (name == "deepsqueeze" || name == "deep-squeeze" || name == "sparse-push" || name == "ds") {
    return Algorithm::kDeepSqueeze;
  }
  if (name == "choco" || name == "choco-sgd" || name == "quant-sgp") return Algorithm::kChoco;
  throw ConfigError("unknown algorithm '" + std::string(name) +
                    "': expected dpsgd, deepsqueeze (sparse-push) or choco (quant-sgp)");
}

std::string_view to_string(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kDpsgd:
      return "dpsgd";
    case Algorithm::kDeepSqueeze:
      return "deepsqueeze";
    case Algorithm::kChoco:
      return "choco";
  }
  return "?";
}

XhatInit parse_xhat_init(std::string_view name) {
  if (name == "zero") return XhatInit::kZero;
  if (name == "model") return XhatInit::kModel;
  throw ConfigError("xhat_init must be 'zero' or 'model', got '" + std::string(name) + "'");
}

std::string_view to_string(XhatInit init) { return init == XhatInit::kZero ? "zero" : "model"; }

at::Tensor consensus_step_matrix(const at::Tensor& mixing, double eta) {
  std::ostringstream msg;
  msg << "mixing matrix must be a square float32 [n, n] tensor, got " << mixing.sizes() << " "
      << mixing.scalar_type();
  LPDT_CHECK(
      mixing.dim() == 2 && mixing.size(0) == mixing.size(1) && mixing.scalar_type() == at::kFloat,
      msg.str());
  const at::Tensor eye = at::eye(mixing.size(0), mixing.options());
  return (mixing - eye).mul_(eta);
}

ConsensusStep::ConsensusStep(const at::Tensor& mixing, double eta)
    : ConsensusStep(mixing, eta, NodeRange::all(mixing.dim() == 2 ? mixing.size(0) : 0)) {}

ConsensusStep::ConsensusStep(const at::Tensor& mixing, double eta, const NodeRange& rows)
    : rows_(rows) {
  const at::Tensor full = consensus_step_matrix(mixing, eta);
  LPDT_CHECK(rows.total == full.size(0) && rows.first >= 0 && rows.count > 0 &&
                 rows.end() <= rows.total,
             "ConsensusStep: hosted rows outside the mixing matrix");
  dense_ = rows.is_all() ? full : full.narrow(0, rows.first, rows.count).contiguous();
  if (dense_.device().is_cpu()) sparse_ = dense_.to_sparse().coalesce();
}

void ConsensusStep::add_product(at::Tensor& z, const at::Tensor& m) const {
  if (sparse_.defined()) {
    z.addmm_(sparse_, m);
  } else {
    z.addmm_(dense_, m);
  }
}

void ConsensusStep::add_self_product(at::Tensor& z) const {
  LPDT_CHECK(rows_.is_all(), "ConsensusStep::add_self_product needs every row hosted");
  z.add_(at::mm(sparse_.defined() ? sparse_ : dense_, z));
}

compress::Compressed GossipAlgorithm::mix(at::Tensor& z, const ConsensusStep& step,
                                          std::int64_t round) {
  LPDT_CHECK(step.rows().is_all(), "GossipAlgorithm::mix needs every node hosted");
  compress::Compressed sent = prepare(z, round);
  combine(z, sent.dense, step);
  return sent;
}

std::unique_ptr<GossipAlgorithm> make_gossip(Algorithm algorithm,
                                             std::unique_ptr<compress::Compressor> compressor,
                                             const NodeRange& nodes, const LayerLayout& layout,
                                             XhatInit xhat_init, at::Device device) {
  LPDT_CHECK(compressor != nullptr, "make_gossip: no compressor");
  switch (algorithm) {
    case Algorithm::kDpsgd:
      if (compressor->name() != "none") {
        throw ConfigError("algorithm dpsgd sends dense models and takes compressor 'none', got '" +
                          std::string(compressor->name()) +
                          "' (use deepsqueeze or choco to compress)");
      }
      return std::make_unique<Dpsgd>(layout);
    case Algorithm::kDeepSqueeze:
      return std::make_unique<DeepSqueeze>(std::move(compressor), nodes.count, layout, device);
    case Algorithm::kChoco:
      return std::make_unique<Choco>(std::move(compressor), nodes, layout, xhat_init, device);
  }
  LPDT_CHECK(false, "unknown algorithm");
  return nullptr;
}

}  // namespace lpdt::algo
