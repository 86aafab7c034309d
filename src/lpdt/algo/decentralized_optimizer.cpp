#include "lpdt/algo/decentralized_optimizer.h"

#include <set>
#include <sstream>

#include "lpdt/comm/message_codec.h"
#include "lpdt/core/error.h"

namespace lpdt::algo {
namespace {

bool adaptive(const DecentralizedOptions& o) { return o.optimizer() != "sgd"; }

AdamOptions adam_options(const DecentralizedOptions& o) {
  return AdamOptions()
      .beta1(o.beta1())
      .beta2(o.beta2())
      .eps(o.eps())
      .weight_decay(o.weight_decay())
      .decoupled_weight_decay(o.optimizer() == "adamw");
}

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
  if (o.optimizer() != "sgd" && o.optimizer() != "adam" && o.optimizer() != "adamw") {
    throw ConfigError("local optimizer must be sgd, adam or adamw, got '" + o.optimizer() + "'");
  }
  if (adaptive(o)) {
    if (o.qgm()) {
      throw ConfigError("optimizer '" + o.optimizer() +
                        "' cannot run with qgm: quasi-global momentum (Lin et al. 2021) is a "
                        "momentum SGD step with its own buffer and replaces the local optimizer; "
                        "use optimizer sgd with qgm, or turn qgm off");
    }
    validate(adam_options(o));
    return o;
  }
  validate(
      SgdOptions().momentum(o.momentum()).nesterov(o.nesterov()).weight_decay(o.weight_decay()));
  return o;
}

}  // namespace

at::Tensor columns_mask(const LayerLayout& layout, const std::vector<bool>& per_segment) {
  if (per_segment.size() != layout.segments.size()) {
    throw UserError("columns_mask: one flag per layout segment: " +
                    std::to_string(layout.segments.size()) + " segments, " +
                    std::to_string(per_segment.size()) + " flags");
  }
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
    : DecentralizedOptimizer(options, layout, device,
                             std::make_unique<InProcessExchange>([num_nodes] {
                               if (num_nodes < 1) {
                                 throw UserError(
                                     "DecentralizedOptimizer: num_nodes must be at least 1, got " +
                                     std::to_string(num_nodes));
                               }
                               return num_nodes;
                             }())) {}

DecentralizedOptimizer::DecentralizedOptimizer(const DecentralizedOptions& options,
                                               const LayerLayout& layout, at::Device device,
                                               std::unique_ptr<MessageExchange> exchange)
    : options_(validated(options)),
      algorithm_(parse_algorithm(options_.algorithm())),
      accounting_(metrics::parse_byte_accounting(options_.accounting())),
      exchange_(std::move(exchange)),
      nodes_(exchange_ ? exchange_->nodes() : NodeRange{}),
      num_nodes_(nodes_.total),
      layout_(layout),
      device_(device),
      push_sum_(nodes_.count, device),
      rounds_(at::zeros({}, at::kLong)) {
  LPDT_CHECK(exchange_ != nullptr, "optimizer needs a message exchange");
  if (nodes_.count < 1 || layout.total_numel < 1) {
    throw UserError("DecentralizedOptimizer: needs nodes and parameters, got " +
                    std::to_string(nodes_.count) + " nodes and a layout of " +
                    std::to_string(layout.total_numel) + " values");
  }
  if (options_.compressor().first_node() != nodes_.first) {
    throw UserError("DecentralizedOptimizer: the compressor's first_node is " +
                    std::to_string(options_.compressor().first_node()) +
                    "; it must be the first hosted node, " + std::to_string(nodes_.first));
  }
  const XhatInit xhat_init = parse_xhat_init(options_.xhat_init());
  const std::int64_t rows = nodes_.count;
  if (options_.qgm()) {
    qgm_.emplace(options_.momentum(), options_.nesterov(), options_.weight_decay(), rows,
                 layout.total_numel, device);
  } else if (adaptive(options_)) {
    adam_.emplace(adam_options(options_), rows, layout.total_numel, device);
  } else {
    sgd_.emplace(SgdOptions()
                     .momentum(options_.momentum())
                     .nesterov(options_.nesterov())
                     .weight_decay(options_.weight_decay()),
                 rows, layout.total_numel, device);
  }
  gossip_ = make_gossip(algorithm_, compress::make_compressor(options_.compressor()), nodes_,
                        layout, xhat_init, device);
}

void DecentralizedOptimizer::set_faults(std::unique_ptr<LinkFaults> faults) {
  faults_ = std::move(faults);
}

void DecentralizedOptimizer::set_trainable(const at::Tensor& trainable) {
  if (!trainable.defined()) {
    trainable_ = at::Tensor();
    return;
  }
  if (trainable.dim() != 1 || trainable.size(0) != layout_.total_numel) {
    std::ostringstream msg;
    msg << "DecentralizedOptimizer: the trainable mask must be [" << layout_.total_numel
        << "], got " << trainable.sizes();
    throw UserError(msg.str());
  }
  trainable_ = trainable.to(device_, at::kFloat).ne(0).to(at::kFloat).unsqueeze(0);  // [1, P]
}

std::int64_t DecentralizedOptimizer::rounds_done() const { return rounds_.item<std::int64_t>(); }

void DecentralizedOptimizer::check_inputs(const at::Tensor& x, const at::Tensor& mixing,
                                          std::int64_t round, const metrics::ByteLedger& ledger) {
  const auto describe = [](const at::Tensor& t) {
    if (!t.defined()) return std::string("an undefined tensor");
    std::ostringstream os;
    os << t.sizes() << " " << t.scalar_type() << " on " << t.device();
    return os.str();
  };
  const bool x_ok = x.defined() && x.dim() == 2 && x.size(0) == nodes_.count &&
                    x.size(1) == layout_.total_numel && x.scalar_type() == at::kFloat &&
                    x.device().type() == device_.type();
  if (!x_ok) {
    std::ostringstream msg;
    msg << "DecentralizedOptimizer: x must be [" << nodes_.count << ", " << layout_.total_numel
        << "] float32 on " << device_ << " (the hosted nodes' parameters), got " << describe(x);
    throw UserError(msg.str());
  }
  const bool mixing_ok = mixing.defined() && mixing.dim() == 2 && mixing.size(0) == num_nodes_ &&
                         mixing.size(1) == num_nodes_ && mixing.scalar_type() == at::kFloat &&
                         mixing.device().type() == device_.type();
  if (!mixing_ok) {
    std::ostringstream msg;
    msg << "DecentralizedOptimizer: mixing must be [" << num_nodes_ << ", " << num_nodes_
        << "] float32 on " << device_ << " (W of the round), got " << describe(mixing);
    throw UserError(msg.str());
  }
  if (ledger.mode() != accounting_ || ledger.num_nodes() != num_nodes_) {
    throw UserError("DecentralizedOptimizer: the byte ledger counts " +
                    std::to_string(ledger.num_nodes()) + " nodes in " +
                    std::string(metrics::to_string(ledger.mode())) +
                    " accounting; this optimizer's has " + std::to_string(num_nodes_) +
                    " nodes in " + std::string(metrics::to_string(accounting_)) +
                    " accounting (make_ledger() makes one)");
  }
  if (!ledger.rounds().empty() && round <= ledger.rounds().back().first) {
    throw UserError("DecentralizedOptimizer: round " + std::to_string(round) +
                    " is not after the ledger's last round, " +
                    std::to_string(ledger.rounds().back().first) + ": rounds must increase");
  }
  // W's values (docs/graph.md): what a push-sum round needs to keep the nodes' average.
  if (checked_mixing_.defined() && checked_mixing_.is_same(mixing) &&
      checked_mixing_version_ == mixing._version()) {
    return;
  }
  const at::Tensor w = mixing.to(at::kCPU, at::kDouble);
  std::string problem;
  if (!at::isfinite(w).all().item<bool>()) {
    problem = "has values that are not finite";
  } else if (w.min().item<double>() < 0) {
    problem = "has a negative weight";
  } else if (w.diagonal().min().item<double>() <= 0) {
    problem = "has a node without its self weight (W[i][i] = 0)";
  } else {
    // float32 weights sum to 1 within their rounding, n of float32's epsilons.
    const at::Tensor off = (w.sum(0) - 1).abs();
    const double bound = static_cast<double>(num_nodes_) * 0x1p-23 + 1e-6;
    if (off.max().item<double>() > bound) {
      const std::int64_t column = off.argmax().item<std::int64_t>();
      problem = "is not column-stochastic: column " + std::to_string(column) + " sums to " +
                std::to_string(w.select(1, column).sum().item<double>());
    }
  }
  if (!problem.empty()) {
    throw UserError("DecentralizedOptimizer: mixing " + problem +
                    "; W must be column-stochastic with self weights, no weight negative "
                    "(graph::Topology::mixing_matrix(at::kFloat) makes one)");
  }
  checked_mixing_ = mixing;
  checked_mixing_version_ = mixing._version();
}

void DecentralizedOptimizer::consensus(at::Tensor& z, const at::Tensor& mixing, std::int64_t round,
                                       metrics::ByteLedger& ledger) {
  const compress::Compressed sent = gossip_->prepare(z, round);
  ExchangedRound heard =
      exchange_->exchange(sent, push_sum_.weights(), host_mixing(mixing), round, algorithm_);
  if (faults_) faults_->begin_round(round, host_mixing(mixing), heard);
  // L = eta (W - I), with W without the edges of dead nodes (algo/link_faults.h).
  at::Tensor live_mixing = mixing;
  if (faults_ && !faults_->dead_nodes().empty()) {
    live_mixing = faults_->surviving_mixing(host_mixing(mixing)).to(mixing.device());
  }
  const ConsensusStep consensus_step(live_mixing, options_.eta(), nodes_);
  gossip_->combine(z, heard.messages, consensus_step);
  push_sum_.mix(consensus_step, heard.push_sum_weights);  // ps <- ps + eta (W ps - ps)  (spec 5.1)
  if (faults_) {
    faults_->correct(z, gossip_->mixed_operand(heard.messages), push_sum_.weights(),
                     heard.push_sum_weights, options_.eta());
  }
  if (accounting_ == metrics::ByteAccounting::kReference) {
    last_payload_ = at::full({num_nodes_},
                             metrics::reference_payload_bytes(sent.sent.values, sent.sent.sparse),
                             at::kLong);
  } else if (!sent.sent.sparse) {
    // The encoded size of every node's payload (comm/wire_payload.h); a dense one depends only on
    // the layout (no device work: the step stays capturable).
    last_payload_ = at::full({num_nodes_}, comm::dense_payload_bytes(sent.values, layout_), at::kLong);
  } else if (nodes_.is_all()) {
    // Sparse messages' sizes depend on the kept positions: a read from the device.
    last_payload_ = comm::payload_bytes(sent, layout_).cpu();
  } else {
    // The hosted nodes' sizes, and the sizes of the payloads that came from other processes.
    last_payload_ = heard.received_payload_bytes.clone();
    last_payload_.narrow(0, nodes_.first, nodes_.count).copy_(comm::payload_bytes(sent, layout_));
  }
  record_bytes(round, mixing, ledger);
  rounds_.add_(1);
}

const at::Tensor& DecentralizedOptimizer::live_edges(const at::Tensor& host) {
  if (!faults_ || faults_->dead_nodes().empty()) return host;
  // Dead nodes only join the set, so its size tells whether it changed.
  const std::set<std::int64_t>& dead = faults_->dead_nodes();
  if (!live_edges_source_.defined() || !live_edges_source_.is_same(host) ||
      live_edges_dead_count_ != dead.size()) {
    live_edges_ = host.clone();
    for (const std::int64_t d : dead) {
      live_edges_.select(0, d).zero_();  // d hears nothing
      live_edges_.select(1, d).zero_();  // and sends nothing
    }
    live_edges_source_ = host;
    live_edges_dead_count_ = dead.size();
  }
  return live_edges_;
}

void DecentralizedOptimizer::record_bytes(std::int64_t round, const at::Tensor& mixing,
                                          metrics::ByteLedger& ledger) {
  // A dead node sends nothing, and no survivor sends to it (docs/faults.md, "Dead peers").
  const at::Tensor& edges_used = live_edges(host_mixing(mixing));
  if (nodes_.is_all()) {
    ledger.record_round_from_payload(round, edges_used, last_payload_);
    return;
  }
  // Only the hosted nodes' sends and receives: other ranks record theirs.
  const metrics::EdgeBytes edges = metrics::bytes_over_edges(edges_used, last_payload_);
  at::Tensor hosted = at::zeros({num_nodes_}, at::kLong);
  hosted.narrow(0, nodes_.first, nodes_.count).fill_(1);
  ledger.record_round(round, edges.sent * hosted, edges.received * hosted);
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
  record_bytes(round, mixing, ledger);
  rounds_.add_(1);
}

void DecentralizedOptimizer::step(at::Tensor& x, const at::Tensor& grad, const at::Tensor& mixing,
                                  double lr, std::int64_t round, metrics::ByteLedger& ledger) {
  check_inputs(x, mixing, round, ledger);
  if (!grad.defined() || grad.sizes() != x.sizes() || grad.scalar_type() != at::kFloat ||
      grad.device().type() != x.device().type()) {
    std::ostringstream msg;
    msg << "DecentralizedOptimizer: grad must have x's shape " << x.sizes()
        << ", float32, on its device; got ";
    if (grad.defined()) {
      msg << grad.sizes() << " " << grad.scalar_type() << " on " << grad.device();
    } else {
      msg << "an undefined tensor";
    }
    throw UserError(msg.str());
  }
  at::NoGradGuard no_grad;
  const at::Tensor x_before = qgm_ ? x.clone() : at::Tensor();
  at::Tensor& z = x;
  push_sum_.to_numerator(z);  // z = x * ps  (spec 5.1)
  if (rounds_done() == 0) gossip_->start(z);
  if (qgm_) {
    qgm_->local_step(z, grad, lr, trainable_);  // spec 4.2
  } else if (adam_) {
    adam_->step(z, grad, lr, trainable_);  // docs/algorithms.md, "Local optimizer: Adam/AdamW"
  } else {
    sgd_->step(z, grad, lr, trainable_);  // spec 4.1
  }
  consensus(z, mixing, round, ledger);  // spec 5.2 / 5.3, applied in the same iteration
  push_sum_.to_params(z);               // x = z / ps
  if (qgm_) qgm_->after_consensus(x_before, x, lr, trainable_);
}

void DecentralizedOptimizer::gossip_round(at::Tensor& x, const at::Tensor& mixing,
                                          std::int64_t round, metrics::ByteLedger& ledger) {
  check_inputs(x, mixing, round, ledger);
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
  if (adam_) {
    s.emplace("adam_m", adam_->exp_avg());
    s.emplace("adam_v", adam_->exp_avg_sq());
    s.emplace("adam_step", adam_->step_count());
  }
  for (auto& [name, tensor] : gossip_->state()) s.emplace(name, tensor);
  return s;
}

void DecentralizedOptimizer::load_state(const std::map<std::string, at::Tensor>& saved) {
  at::NoGradGuard no_grad;
  // Every tensor is checked before any is copied: a refused state leaves this one as it was.
  // A count or a float stored as another type would be converted without a word (2.7 rounds
  // read as 2): each has its live tensor's type.
  std::map<std::string, at::Tensor> live_state = state();
  for (const auto& [name, live] : live_state) {
    const auto it = saved.find(name);
    if (it == saved.end()) {
      throw UserError("optimizer checkpoint has no tensor '" + name + "'");
    }
    // Per-node tensors hold all n nodes' rows; this process takes its own.
    auto expected = live.sizes().vec();
    if (live.dim() > 0) expected[0] = num_nodes_;
    if (it->second.sizes().vec() != expected || it->second.scalar_type() != live.scalar_type()) {
      std::ostringstream msg;
      msg << "optimizer checkpoint tensor '" << name << "' is " << it->second.sizes() << " "
          << it->second.scalar_type() << ", expected " << at::IntArrayRef(expected) << " "
          << live.scalar_type();
      throw UserError(msg.str());
    }
    if (at::isFloatingType(live.scalar_type()) && !at::isfinite(it->second).all().item<bool>()) {
      throw UserError("optimizer checkpoint tensor '" + name + "' has values that are not finite");
    }
  }
  // A dead node's row is zeros in a checkpoint (docs/results.md): 0 is a weight, a negative one
  // is none.
  if ((saved.at("ps") < 0).any().item<bool>()) {
    throw UserError("optimizer checkpoint tensor 'ps' has a negative push-sum weight");
  }
  for (auto& [name, live] : live_state) {
    const at::Tensor& stored = saved.at(name);
    live.copy_(live.dim() > 0 ? stored.narrow(0, nodes_.first, nodes_.count) : stored);
  }
  gossip_->restore(saved);
}

}  // namespace lpdt::algo
