#include "lpdt/quant/request_io.h"

namespace lpdt::quant {

void save_request(torch::autograd::AutogradContext* ctx, const QuantizeRequest& r) {
  ctx->saved_data["request.bits"] = static_cast<std::int64_t>(r.bits);
  ctx->saved_data["request.scheme"] = static_cast<std::int64_t>(r.scheme);
  ctx->saved_data["request.seed"] = static_cast<std::int64_t>(r.key.seed);
  ctx->saved_data["request.step"] = r.key.step;
  ctx->saved_data["request.first_node"] = r.key.first_node;
  ctx->saved_data["request.site"] = static_cast<std::int64_t>(r.site);
  // The device step counter's address (stochastic_draws.h, DrawKey::device_step), 0 for none.
  ctx->saved_data["request.device_step"] =
      static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(r.key.device_step));
}

QuantizeRequest load_request(torch::autograd::AutogradContext* ctx) {
  QuantizeRequest r;
  r.bits = static_cast<int>(ctx->saved_data["request.bits"].toInt());
  r.scheme = static_cast<QuantScheme>(ctx->saved_data["request.scheme"].toInt());
  r.key.seed = static_cast<std::uint64_t>(ctx->saved_data["request.seed"].toInt());
  r.key.step = ctx->saved_data["request.step"].toInt();
  r.key.first_node = ctx->saved_data["request.first_node"].toInt();
  r.site = static_cast<SiteId>(ctx->saved_data["request.site"].toInt());
  r.key.device_step = reinterpret_cast<const std::int64_t*>(
      static_cast<std::intptr_t>(ctx->saved_data["request.device_step"].toInt()));
  r.rounding = Rounding::kStochastic;
  return r;
}

}  // namespace lpdt::quant
