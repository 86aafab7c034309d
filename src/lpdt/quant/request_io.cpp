#include "lpdt/quant/request_io.h"

namespace lpdt::quant {

void save_request(torch::autograd::AutogradContext* ctx, const QuantizeRequest& r) {
  ctx->saved_data["request.bits"] = static_cast<std::int64_t>(r.bits);
  ctx->saved_data["request.scheme"] = static_cast<std::int64_t>(r.scheme);
  ctx->saved_data["request.seed"] = static_cast<std::int64_t>(r.key.seed);
  ctx->saved_data["request.step"] = r.key.step;
  ctx->saved_data["request.first_node"] = r.key.first_node;
  ctx->saved_data["request.site"] = static_cast<std::int64_t>(r.site);
}

QuantizeRequest load_request(torch::autograd::AutogradContext* ctx) {
  QuantizeRequest r;
  r.bits = static_cast<int>(ctx->saved_data["request.bits"].toInt());
  r.scheme = static_cast<QuantScheme>(ctx->saved_data["request.scheme"].toInt());
  r.key.seed = static_cast<std::uint64_t>(ctx->saved_data["request.seed"].toInt());
  r.key.step = ctx->saved_data["request.step"].toInt();
  r.key.first_node = ctx->saved_data["request.first_node"].toInt();
  r.site = static_cast<SiteId>(ctx->saved_data["request.site"].toInt());
  r.rounding = Rounding::kStochastic;
  return r;
}

}  // namespace lpdt::quant
