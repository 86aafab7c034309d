#include "lpdt/algo/decentralized_optimizer.h"

#include <sstream>

#include "lpdt/comm/message_codec.h"
#include "lpdt/core/error.h"

namespace lpdt::algo {
namespace {

DecentralizedOptions validated(const DecentralizedOptions& o) {
  if (!(o.eta() > 0.0 && o.eta() <= 1.0)) {
    std::ostringstream msg;
    msg << "consensus step size eta must be in (0, 1], got " << o.eta();
    throw ConfigError(msg.str());
  }
  if (parse_algorithm(o.algorithm()) == Algorithm::kDpsgd &&
      o.compressor().values() != compress::MessageValues::kFloat32) {
    throw ConfigError("algorithm dpsgd sends float32 messages: message values '" +
                      std::string(compress::to_string(o.compressor().values())) +
                      "' need an algorithm with error feedback (deepsqueeze or choco)");
  }
  validate(
      SgdOptions().momentum(o.momentum()).nesterov(o.nesterov()).weight_decay(o.weight_decay()));
  return o;
}

}  // namespace

at::Tensor columns_mask(const LayerLayout& layout, const std::vector<bool>& per_segment) {
  LPDT_CHECK(per_segment.size() == layout.segments.size(),
             "columns_mask: one flag per layout segment");
  at::Tensor mask = at::zeros({layout.total_numel}, at::kBool);
  for (std::size_t s = 0; s < per_segment.size(); ++s) {
    if (per_segment[s]) {
      mask.narrow(0, layout.segments[s].offset, layout.segments[s].numel).fill_(true);
    }
  }
  return mask;
}

DecentralizedOptimizer::DecentralizedOptimizer(const DecentralizedOptions& options,
                                               std::int64_t num_nodes, const LayerLayout& layout,
                                               at::Device device)
    : options_(validated(options)),
      algorithm_(parse_algorithm(options_.algorithm())),
      accounting_(metrics::parse_byte_accounting(options_.accounting())),
      num_nodes_(num_nodes),
      layout_(layout),
      device_(device),
      push_sum_(num_nodes, device),
      rounds_(at::zeros({}, at::kLong)) {
  LPDT_CHECK(num_nodes > 0 && layout.total_numel > 0, "optimizer needs nodes and parameters");
  const XhatInit xhat_init = parse_xhat_init(options_.xhat_init());
  if (options_.qgm()) {
    qgm_.emplace(options_.momentum(), options_.nesterov(), options_.weight_decay(), num_nodes,
                 layout.total_numel, device);
  } else {
    sgd_.emplace(SgdOptions()
                     .momentum(options_.momentum())
                     .nesterov(options_.nesterov())
                     .weight_decay(options_.weight_decay()),
                 num_nodes, layout.total_numel, device);
  }
  gossip_ = make_gossip(algorithm_, compress::make_compressor(options_.compressor()), num_nodes,
                        layout, xhat_init, device);
}

void DecentralizedOptimizer::set_trainable(const at::Tensor& trainable) {
  if (!trainable.defined()) {
    trainable_ = at::Tensor();
    return;
  }
  std::ostringstream msg;
  msg << "trainable mask must be [" << layout_.total_numel << "], got " << trainable.sizes();
  LPDT_CHECK(trainable.dim() == 1 && trainable.size(0) == layout_.total_numel, msg.str());
  trainable_ = trainable.to(device_, at::kFloat).ne(0).to(at::kFloat).unsqueeze(0);  // [1, P]
}

std::int64_t DecentralizedOptimizer::rounds_done() const { return rounds_.item<std::int64_t>(); }

void DecentralizedOptimizer::check_inputs(const at::Tensor& x, const at::Tensor& mixing) const {
  std::ostringstream msg;
  msg << "x must be [" << num_nodes_ << ", " << layout_.total_numel << "] float32 on " << device_
      << ", got " << x.sizes() << " " << x.scalar_type() << " on " << x.device()
      << "; mixing must be [" << num_nodes_ << ", " << num_nodes_ << "] float32, got "
      << mixing.sizes() << " " << mixing.scalar_type();
  LPDT_CHECK(x.dim() == 2 && x.size(0) == num_nodes_ && x.size(1) == layout_.total_numel &&
                 x.scalar_type() == at::kFloat && x.device().type() == device_.type() &&
                 mixing.dim() == 2 && mixing.size(0) == num_nodes_ &&
                 mixing.size(1) == num_nodes_ && mixing.scalar_type() == at::kFloat &&
                 mixing.device().type() == device_.type(),
             msg.str());
}

void DecentralizedOptimizer::consensus(at::Tensor& z, const at::Tensor& mixing, std::int64_t round,
                                       metrics::ByteLedger& ledger) {
  LPDT_CHECK(ledger.mode() == accounting_ && ledger.num_nodes() == num_nodes_,
             "byte ledger mode / node count differs from the optimizer's");
  const ConsensusStep consensus_step(mixing, options_.eta());  // L = eta (W - I)
  const compress::Compressed sent = gossip_->mix(z, consensus_step, round);
  push_sum_.mix(consensus_step.matrix());  // ps <- ps + eta (W ps - ps)  (spec 5.1)
  if (accounting_ == metrics::ByteAccounting::kReference) {
    last_payload_ = at::full({num_nodes_},
                             metrics::reference_payload_bytes(sent.sent.values, sent.sent.sparse),
                             at::kLong);
  } else if (!sent.sent.sparse) {
    // The encoded size of every node's payload (comm/wire_payload.h); a dense one depends only on
    // the layout (no device work: the step stays capturable).
    last_payload_ = at::full({num_nodes_}, comm::dense_payload_bytes(sent.values, layout_), at::kLong);
  } else {
    // Sparse messages' sizes depend on the kept positions: a read from the device.
    last_payload_ = comm::payload_bytes(sent, layout_).cpu();
  }
  ledger.record_round_from_payload(round, host_mixing(mixing), last_payload_);
  rounds_.add_(1);
}

const at::Tensor& DecentralizedOptimizer::host_mixing(const at::Tensor& mixing) {
  if (mixing.is_cpu()) return mixing;
  if (!device_mixing_seen_.defined() || !device_mixing_seen_.is_same(mixing)) {
    device_mixing_seen_ = mixing;
    host_mixing_ = mixing.cpu();
  }
  return host_mixing_;
}

void DecentralizedOptimizer::account_replayed_round(const at::Tensor& mixing, std::int64_t round,
                                                    metrics::ByteLedger& ledger) {
  LPDT_CHECK(rounds_done() > 0, "account_replayed_round: no round was captured");
  ledger.record_round_from_payload(round, host_mixing(mixing), last_payload_);
  rounds_.add_(1);
}

void DecentralizedOptimizer::step(at::Tensor& x, const at::Tensor& grad, const at::Tensor& mixing,
                                  double lr, std::int64_t round, metrics::ByteLedger& ledger) {
  check_inputs(x, mixing);
  LPDT_CHECK(grad.sizes() == x.sizes() && grad.scalar_type() == at::kFloat,
             "grad must have the shape and dtype of x");
  at::NoGradGuard no_grad;
  const at::Tensor x_before = qgm_ ? x.clone() : at::Tensor();
  at::Tensor& z = x;
  push_sum_.to_numerator(z);  // z = x * ps  (spec 5.1)
  if (rounds_done() == 0) gossip_->start(z);
  if (qgm_) {
    qgm_->local_step(z, grad, lr, trainable_);  // spec 4.2
  } else {
    sgd_->step(z, grad, lr, trainable_);  // spec 4.1
  }
  consensus(z, mixing, round, ledger);  // spec 5.2 / 5.3, applied in the same iteration
  push_sum_.to_params(z);               // x = z / ps
  if (qgm_) qgm_->after_consensus(x_before, x, lr, trainable_);
}

void DecentralizedOptimizer::gossip_round(at::Tensor& x, const at::Tensor& mixing,
                                          std::int64_t round, metrics::ByteLedger& ledger) {
  check_inputs(x, mixing);
  at::NoGradGuard no_grad;
  push_sum_.to_numerator(x);
  if (rounds_done() == 0) gossip_->start(x);
  consensus(x, mixing, round, ledger);
  push_sum_.to_params(x);
}

metrics::ByteLedger DecentralizedOptimizer::make_ledger() const {
  return metrics::ByteLedger(num_nodes_, accounting_);
}

std::map<std::string, at::Tensor> DecentralizedOptimizer::state() {
  std::map<std::string, at::Tensor> s{{"ps", push_sum_.weights()}, {"rounds", rounds_}};
  if (sgd_ && sgd_->momentum_buffer().defined()) s.emplace("momentum", sgd_->momentum_buffer());
  if (qgm_) s.emplace("qgm_buffer", qgm_->buffer());
  for (auto& [name, tensor] : gossip_->state()) s.emplace(name, tensor);
  return s;
}

void DecentralizedOptimizer::load_state(const std::map<std::string, at::Tensor>& saved) {
  at::NoGradGuard no_grad;
  for (auto& [name, live] : state()) {
    const auto it = saved.find(name);
    if (it == saved.end()) {
      throw UserError("optimizer checkpoint has no tensor '" + name + "'");
    }
    if (it->second.sizes() != live.sizes()) {
      std::ostringstream msg;
      msg << "optimizer checkpoint tensor '" << name << "' has shape " << it->second.sizes()
          << ", expected " << live.sizes();
      throw UserError(msg.str());
    }
    live.copy_(it->second);
  }
}

}  // namespace lpdt::algo
