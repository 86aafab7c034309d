#pragma once
// Node-batched token embeddings: each node looks its tokens up in its own table. The k tables are
// one [k, V, D] view of the [k, P] parameters, read as a single [k * V, D] gather (no loop over
// nodes). At 8 bits the table is fake-quantized per node with round-to-nearest, as every weight
// is (reference spec 7.2); the gradient reaches the float master table straight-through.
#include "lpdt/nn/module.h"
#include "lpdt/quant/quant_options.h"

namespace lpdt::nn {

class Embedding {
 public:
  // table [num_embeddings, dim] ~ N(0, init_std) (BERT: 0.02).
  Embedding(Registry& registry, const std::string& name, std::int64_t num_embeddings,
            std::int64_t dim, const quant::QuantOptions& quant, double init_std = 0.02);
  // ids: [k, ...] int64 in [0, num_embeddings) -> [k, ..., dim] float32
  at::Tensor forward(const Context& ctx, const at::Tensor& ids) const;
  // The first `count` rows of every node's table: [k, count, dim] (position embeddings).
  at::Tensor first_rows(const Context& ctx, std::int64_t count) const;

  std::int64_t num_embeddings() const { return num_embeddings_; }

 private:
  at::Tensor table(const Context& ctx) const;  // [k, V, D], quantized at 8 bits
  std::string name_;
  std::int64_t num_embeddings_;
  std::int64_t dim_;
  quant::QuantOptions quant_;
  ParamRef weight_;
};

}  // namespace lpdt::nn
