#include "lpdt/core/running_average.h"

#include <cstdint>
#include <string>

#include "lpdt/core/error.h"

namespace lpdt {

namespace {

template <typename T>
void move_values(const at::Tensor& running, const at::Tensor& value, double momentum) {
  const std::int64_t n = running.numel();
  const std::int64_t stride = running.is_contiguous() ? 1 : running.stride(0);
  T* r = running.data_ptr<T>();
  const at::Tensor v_dense = value.contiguous();
  const T* v = v_dense.data_ptr<T>();
  const auto keep = static_cast<T>(1.0 - momentum), take = static_cast<T>(momentum);
  for (std::int64_t i = 0; i < n; ++i) {
    // Two roundings, never fused (this file builds with -ffp-contract=off).
    const T kept = r[i * stride] * keep;
    const T moved = take * v[i];
    r[i * stride] = kept + moved;
  }
}

}  // namespace

void move_running_average(const at::Tensor& running, const at::Tensor& value, double momentum) {
  const bool floating =
      running.scalar_type() == at::kFloat || running.scalar_type() == at::kDouble;
  LPDT_CHECK(floating && value.scalar_type() == running.scalar_type() &&
                 running.numel() == value.numel(),
             "move_running_average: expected float32 or float64 tensors of one type and element "
             "count, got " +
                 std::to_string(running.numel()) + " running values of " +
                 std::string(c10::toString(running.scalar_type())) + " and " +
                 std::to_string(value.numel()) + " measured of " +
                 std::string(c10::toString(value.scalar_type())));
  if (!running.device().is_cpu()) {
    at::Tensor r = running;  // a handle to the same storage
    r.mul_(1.0 - momentum).add_(value.reshape(running.sizes()), momentum);
    return;
  }
  LPDT_CHECK(value.device().is_cpu(), "move_running_average: running on the CPU, value elsewhere");
  LPDT_CHECK(running.is_contiguous() || running.dim() == 1,
             "move_running_average: the running values must be contiguous or one-dimensional");
  if (running.scalar_type() == at::kFloat) {
    move_values<float>(running, value, momentum);
  } else {
    move_values<double>(running, value, momentum);
  }
}

}  // namespace lpdt
