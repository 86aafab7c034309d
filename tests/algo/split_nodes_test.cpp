// Nodes split across processes: several optimizers, each hosting a block of the nodes and
// exchanging real wire payloads with the others (here threads with a shared mailbox; under MPI,
// ranks, tests/dist/), follow the simulator's trajectory bit for bit, and their byte ledgers add
// up to the simulator's.
#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <barrier>
#include <thread>

#include "graphs.h"
#include "lpdt/algo/choco.h"
#include "lpdt/algo/decentralized_optimizer.h"
#include "lpdt/comm/message_codec.h"

namespace lpdt::algo {
namespace {

using testing::irregular_directed;
using testing::small_layout;

// The processes' shared network: one payload slot per node and a barrier per phase.
struct Mailbox {
  explicit Mailbox(std::int64_t n, std::ptrdiff_t processes)
      : payloads(static_cast<std::size_t>(n)), sync(processes) {}
  std::vector<std::vector<std::uint8_t>> payloads;
  std::barrier<> sync;
};

// A process's exchange: publishes its nodes' encoded payloads, then decodes its in-neighbours'.
class MailboxExchange final : public MessageExchange {
 public:
  MailboxExchange(Mailbox& box, const NodeRange& nodes, const LayerLayout& layout)
      : box_(box),
        nodes_(nodes),
        layout_(layout),
        messages_(torch::zeros({nodes.total, layout.total_numel})),
        weights_(torch::zeros({nodes.total})) {}

  ExchangedRound exchange(const compress::Compressed& sent, const at::Tensor& push_sum_weights,
                          const at::Tensor& mixing, std::int64_t round,
                          Algorithm algorithm) override {
    for (std::int64_t j = nodes_.first; j < nodes_.end(); ++j) {
      box_.payloads[j] = comm::encode(comm::node_message(
          sent, layout_, j - nodes_.first, wire_algorithm(algorithm),
          static_cast<std::uint64_t>(round), static_cast<std::uint32_t>(j),
          push_sum_weights[j - nodes_.first].item<float>()));
    }
    box_.sync.arrive_and_wait();
    messages_.narrow(0, nodes_.first, nodes_.count).copy_(sent.dense);
    weights_.narrow(0, nodes_.first, nodes_.count).copy_(push_sum_weights);
    at::Tensor received = torch::zeros({nodes_.total}, torch::kLong);
    comm::Expectations expect;
    expect.round = static_cast<std::uint64_t>(round);
    expect.layer_numels = comm::layout_numels(layout_);
    for (std::int64_t j = 0; j < nodes_.total; ++j) {
      if (nodes_.contains(j)) continue;
      bool heard = false;
      for (std::int64_t i = nodes_.first; i < nodes_.end(); ++i) heard |= mixing[i][j].item<float>() > 0;
      if (!heard) continue;
      expect.sender = static_cast<std::uint32_t>(j);
      const comm::Message m = comm::decode(box_.payloads[j], expect);
      at::Tensor row = messages_[j];
      comm::read_message_values(m, layout_, row);
      weights_[j] = m.push_sum_weight;
      received[j] = static_cast<std::int64_t>(box_.payloads[j].size());
    }
    box_.sync.arrive_and_wait();  // nobody overwrites a payload before every reader is done
    return ExchangedRound{messages_, weights_, received, {}};
  }
  const NodeRange& nodes() const override { return nodes_; }

 private:
  Mailbox& box_;
  NodeRange nodes_;
  LayerLayout layout_;
  at::Tensor messages_, weights_;
};

struct Case {
  const char* name;
  const char* algorithm;
  const char* compressor;
  double keep;
  compress::MessageValues values;
  bool qgm;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class SplitNodes : public ::testing::TestWithParam<Case> {};

TEST_P(SplitNodes, BitIdenticalToTheSimulator) {
  const Case c = GetParam();
  const auto layout = small_layout();
  const auto w = irregular_directed();
  const std::int64_t n = w.size(0);
  const std::vector<NodeRange> blocks = {{0, 2, n}, {2, 2, n}, {4, 1, n}};
  torch::manual_seed(3);
  const auto x0 = torch::randn({n, layout.total_numel});
  const auto targets = torch::randn({n, layout.total_numel}) * 2;
  const auto options = [&](std::int64_t first) {
    return DecentralizedOptions()
        .algorithm(c.algorithm)
        .compressor(compress::CompressorOptions()
                        .name(c.compressor)
                        .keep_fraction(c.keep)
                        .values(c.values)
                        .seed(9)
                        .first_node(first))
        .eta(0.5)
        .qgm(c.qgm);
  };
  constexpr int kSteps = 12;
  const auto lr = [](int t) { return 0.05 + 0.01 * (t % 3); };

  // The simulator: every node in one optimizer.
  auto x = x0.clone();
  DecentralizedOptimizer whole(options(0), n, layout);
  auto ledger = whole.make_ledger();
  for (int t = 0; t < kSteps; ++t) whole.step(x, x - targets, w, lr(t), t, ledger);

  // Three processes.
  Mailbox box(n, static_cast<std::ptrdiff_t>(blocks.size()));
  std::vector<at::Tensor> parts(blocks.size()), ps(blocks.size());
  std::vector<std::map<std::string, at::Tensor>> states(blocks.size());
  std::vector<metrics::ByteLedger> ledgers;
  for (std::size_t b = 0; b < blocks.size(); ++b) ledgers.push_back(whole.make_ledger());
  std::vector<std::thread> threads;
  std::vector<std::string> errors(blocks.size());
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    threads.emplace_back([&, b] {
      try {
        const NodeRange nodes = blocks[b];
        DecentralizedOptimizer part(options(nodes.first), layout, at::kCPU,
                                    std::make_unique<MailboxExchange>(box, nodes, layout));
        auto xb = x0.narrow(0, nodes.first, nodes.count).clone();
        const auto tb = targets.narrow(0, nodes.first, nodes.count);
        for (int t = 0; t < kSteps; ++t) part.step(xb, xb - tb, w, lr(t), t, ledgers[b]);
        parts[b] = xb;
        ps[b] = part.push_sum_weights().clone();
        for (auto& [name, tensor] : part.state()) states[b][name] = tensor.clone();
      } catch (const std::exception& e) {
        errors[b] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) ASSERT_EQ(e, "");

  EXPECT_TRUE(torch::equal(torch::cat(parts), x)) << "parameters differ";
  std::vector<at::Tensor> ps_rows;
  for (const auto& p : ps) ps_rows.push_back(p);
  EXPECT_TRUE(torch::equal(torch::cat(ps_rows), whole.push_sum_weights()));
  for (auto& [name, tensor] : whole.state()) {
    if (tensor.dim() == 0) continue;
    std::vector<at::Tensor> rows;
    for (auto& s : states) rows.push_back(s.at(name));
    EXPECT_TRUE(torch::equal(torch::cat(rows), tensor)) << name << " differs";
  }
  metrics::ByteLedger sum = ledgers[0];
  for (std::size_t b = 1; b < ledgers.size(); ++b) sum.add(ledgers[b]);
  EXPECT_EQ(sum.bytes_sent_per_node(), ledger.bytes_sent_per_node());
  EXPECT_EQ(sum.bytes_received_per_node(), ledger.bytes_received_per_node());
  EXPECT_EQ(sum.rounds(), ledger.rounds());
  EXPECT_GT(ledger.total_bytes_sent(), 0);
}

using compress::MessageValues;
INSTANTIATE_TEST_SUITE_P(
    Algorithms, SplitNodes,
    ::testing::Values(Case{"dpsgd", "dpsgd", "none", 1.0, MessageValues::kFloat32, false},
                      Case{"choco_topk", "choco", "topk", 0.3, MessageValues::kFloat32, false},
                      Case{"choco_randomk_int8", "choco", "randomk", 0.3, MessageValues::kInt8,
                           false},
                      Case{"deepsqueeze_topk_bf16", "deepsqueeze", "topk", 0.2,
                           MessageValues::kBfloat16, false},
                      Case{"deepsqueeze_int8_qgm", "deepsqueeze", "none", 1.0,
                           MessageValues::kInt8, true}),
    [](const auto& info) { return std::string(info.param.name); });

// A checkpoint of all nodes restores each block's rows and Choco's copies of its neighbours'
// public models: a block resumed mid-run continues exactly as the simulator.
TEST(SplitNodes, LoadStateTakesTheHostedRows) {
  const auto layout = small_layout();
  const auto w = irregular_directed();
  const std::int64_t n = w.size(0);
  torch::manual_seed(5);
  auto x = torch::randn({n, layout.total_numel});
  const auto opts = DecentralizedOptions().algorithm("choco").eta(0.5).compressor(
      compress::CompressorOptions().name("topk").keep_fraction(0.3));
  DecentralizedOptimizer whole(opts, n, layout);
  auto ledger = whole.make_ledger();
  for (int t = 0; t < 4; ++t) whole.step(x, x * 0.1, w, 0.1, t, ledger);
  std::map<std::string, at::Tensor> saved;
  for (auto& [name, tensor] : whole.state()) saved[name] = tensor.clone();

  Mailbox box(n, 1);
  const NodeRange nodes{2, 2, n};
  DecentralizedOptimizer part(
      DecentralizedOptions(opts).compressor(
          compress::CompressorOptions().name("topk").keep_fraction(0.3).first_node(2)),
      layout, at::kCPU, std::make_unique<MailboxExchange>(box, nodes, layout));
  part.load_state(saved);
  EXPECT_TRUE(torch::equal(part.push_sum_weights(), whole.push_sum_weights().narrow(0, 2, 2)));
  EXPECT_TRUE(torch::equal(part.state().at("xhat"), saved.at("xhat").narrow(0, 2, 2)));
  // The copies of the other nodes' x-hat too (node 1 is an in-neighbour of node 2).
  const auto* choco = dynamic_cast<const Choco*>(&part.gossip());
  ASSERT_NE(choco, nullptr);
  EXPECT_TRUE(torch::equal(choco->xhat(), saved.at("xhat")));
  EXPECT_EQ(part.rounds_done(), 4);
  saved.erase("ps");
  EXPECT_THROW(part.load_state(saved), UserError);
}

}  // namespace
}  // namespace lpdt::algo
