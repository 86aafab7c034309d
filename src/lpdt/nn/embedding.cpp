#include "lpdt/nn/embedding.h"

#include "lpdt/core/error.h"
#include "lpdt/nn/quantized_params.h"

namespace lpdt::nn {

Embedding::Embedding(Registry& registry, const std::string& name, std::int64_t num_embeddings,
                     std::int64_t dim, const quant::QuantOptions& quant, double init_std)
    : name_(name), num_embeddings_(num_embeddings), dim_(dim), quant_(quant) {
  weight_ = registry.add_param(join_name(name, "weight"), {num_embeddings, dim},
                               ParamInit::normal(init_std));
}

at::Tensor Embedding::table(const Context& ctx) const {
  return quant_.low_precision() ? quantized_param(ctx, weight_, quant_) : ctx.param(weight_);
}

at::Tensor Embedding::forward(const Context& ctx, const at::Tensor& ids) const {
  LPDT_CHECK(ids.dim() >= 1 && ids.size(0) == ctx.k && ids.scalar_type() == at::kLong,
             name_ + ": expected ids [k, ...] int64");
  const std::int64_t k = ctx.k;
  // Node i's ids index rows [i * V, (i + 1) * V) of the stacked tables.
  const at::Tensor offsets =
      at::arange(k, ids.options()).mul_(num_embeddings_).view({k, 1});  // [k, 1]
  const at::Tensor flat_ids = (ids.reshape({k, -1}) + offsets).reshape({-1});
  const at::Tensor rows = table(ctx).reshape({k * num_embeddings_, dim_}).index_select(0, flat_ids);
  std::vector<std::int64_t> shape = ids.sizes().vec();
  shape.push_back(dim_);
  return rows.view(shape);
}

at::Tensor Embedding::first_rows(const Context& ctx, std::int64_t count) const {
  LPDT_CHECK(count <= num_embeddings_, name_ + ": more positions than the table has");
  return table(ctx).narrow(1, 0, count);
}

}  // namespace lpdt::nn
