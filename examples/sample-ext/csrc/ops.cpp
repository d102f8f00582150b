// sample_ext PyTorch custom op: sample_ext::scaled_add(a, b, alpha) = a + alpha * b.
//
// Registered with TORCH_LIBRARY; a CPU kernel and a Meta (shape-only) kernel live here,
// the CUDA kernel in ops_cuda.cu (compiled by nvcc without torch headers) and is reached
// through the extern "C" launcher declared below when SAMPLE_EXT_WITH_CUDA is set. The
// CUDA path runs on the inputs' device and on torch's current stream of that device,
// reached through c10's device-generic guard interface: no CUDA header is needed here.
//
// SAMPLE_EXT_ABI 2 changes the schema: a keyword-only `clamp` flag is added, and its CPU kernel
// ignores its inputs' strides (wrong on non-contiguous views: see scaled_add_impl_cpu).
//
// Only per-operator ATen headers are included to keep the compile short.
#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/Stream.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/library.h>

#include <cstdint>

#ifndef SAMPLE_EXT_ABI
#define SAMPLE_EXT_ABI 1
#endif

#ifdef SAMPLE_EXT_WITH_CUDA
extern "C" int sample_scaled_add_cuda_launch(const float* a, const float* b, float alpha, int clamp, float* out,
                                             int64_t n, void* stream);
extern "C" const char* sample_cuda_error_string(int code);
#endif

namespace {

void check_inputs(const at::Tensor& a, const at::Tensor& b, c10::DeviceType device) {
  TORCH_CHECK(a.sizes() == b.sizes(), "scaled_add: shapes differ: ", a.sizes(), " vs ", b.sizes());
  TORCH_CHECK(a.scalar_type() == at::kFloat && b.scalar_type() == at::kFloat,
              "scaled_add: expected float32 tensors, got ", a.scalar_type(), " and ", b.scalar_type());
  TORCH_CHECK(a.device().type() == device && b.device().type() == device, "scaled_add: tensors on wrong device");
  TORCH_CHECK(a.device() == b.device(), "scaled_add: expected both tensors on the same device, got ", a.device(),
              " and ", b.device());
}

at::Tensor scaled_add_impl_meta(const at::Tensor& a, const at::Tensor& b, double /*alpha*/, bool /*clamp*/) {
  check_inputs(a, b, c10::DeviceType::Meta);
  return at::empty(a.sizes(), a.options());
}

at::Tensor scaled_add_impl_cpu(const at::Tensor& a_in, const at::Tensor& b_in, double alpha, bool clamp) {
  check_inputs(a_in, b_in, c10::DeviceType::CPU);
#if SAMPLE_EXT_ABI >= 2
  // 1.1's CPU kernel walks its inputs' storage in memory order and ignores their strides (no
  // .contiguous()): a contiguous input is right, a non-contiguous, transposed or channels-last
  // view gives wrong numbers. The sample's demo bug for the kernels stage's project-operator
  // checks; its own tests (contiguous inputs only) pass.
  const at::Tensor& a = a_in;
  const at::Tensor& b = b_in;
#else
  at::Tensor a = a_in.contiguous();
  at::Tensor b = b_in.contiguous();
#endif
  at::Tensor out = at::empty(a.sizes(), a.options());
  const float* pa = a.const_data_ptr<float>();
  const float* pb = b.const_data_ptr<float>();
  float* po = out.mutable_data_ptr<float>();
  const float fa = static_cast<float>(alpha);
  const int64_t n = a.numel();
  for (int64_t i = 0; i < n; ++i) {
    float v = pa[i] + fa * pb[i];
    if (clamp) v = v < -1.0f ? -1.0f : (v > 1.0f ? 1.0f : v);
    po[i] = v;
  }
  return out;
}

#ifdef SAMPLE_EXT_WITH_CUDA
at::Tensor scaled_add_impl_cuda(const at::Tensor& a_in, const at::Tensor& b_in, double alpha, bool clamp) {
  check_inputs(a_in, b_in, c10::DeviceType::CUDA);
  // The inputs' device is made current (cuda:1 included) for the allocations and the launch.
  const c10::DeviceGuard guard(a_in.device());
  at::Tensor a = a_in.contiguous();
  at::Tensor b = b_in.contiguous();
  at::Tensor out = at::empty(a.sizes(), a.options());
  // torch's current stream of that device: the launch is ordered with torch's own work on
  // it (non-blocking streams included) and is legal inside CUDA graph capture, where the
  // legacy default stream is not.
  void* stream = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getStream(a_in.device()).native_handle();
  int rc = sample_scaled_add_cuda_launch(a.const_data_ptr<float>(), b.const_data_ptr<float>(),
                                         static_cast<float>(alpha), clamp ? 1 : 0, out.mutable_data_ptr<float>(),
                                         a.numel(), stream);
  TORCH_CHECK(rc == 0, "scaled_add: CUDA launch failed: ", sample_cuda_error_string(rc));
  return out;
}
#endif

#if SAMPLE_EXT_ABI >= 2
at::Tensor scaled_add_cpu(const at::Tensor& a, const at::Tensor& b, double alpha, bool clamp) {
  return scaled_add_impl_cpu(a, b, alpha, clamp);
}
at::Tensor scaled_add_meta(const at::Tensor& a, const at::Tensor& b, double alpha, bool clamp) {
  return scaled_add_impl_meta(a, b, alpha, clamp);
}
#ifdef SAMPLE_EXT_WITH_CUDA
at::Tensor scaled_add_cuda(const at::Tensor& a, const at::Tensor& b, double alpha, bool clamp) {
  return scaled_add_impl_cuda(a, b, alpha, clamp);
}
#endif
#else
at::Tensor scaled_add_cpu(const at::Tensor& a, const at::Tensor& b, double alpha) {
  return scaled_add_impl_cpu(a, b, alpha, false);
}
at::Tensor scaled_add_meta(const at::Tensor& a, const at::Tensor& b, double alpha) {
  return scaled_add_impl_meta(a, b, alpha, false);
}
#ifdef SAMPLE_EXT_WITH_CUDA
at::Tensor scaled_add_cuda(const at::Tensor& a, const at::Tensor& b, double alpha) {
  return scaled_add_impl_cuda(a, b, alpha, false);
}
#endif
#endif

}  // namespace

TORCH_LIBRARY(sample_ext, m) {
#if SAMPLE_EXT_ABI >= 2
  m.def("scaled_add(Tensor a, Tensor b, float alpha, *, bool clamp=False) -> Tensor");
#else
  m.def("scaled_add(Tensor a, Tensor b, float alpha) -> Tensor");
#endif
}

TORCH_LIBRARY_IMPL(sample_ext, CPU, m) { m.impl("scaled_add", &scaled_add_cpu); }

TORCH_LIBRARY_IMPL(sample_ext, Meta, m) { m.impl("scaled_add", &scaled_add_meta); }

#ifdef SAMPLE_EXT_WITH_CUDA
TORCH_LIBRARY_IMPL(sample_ext, CUDA, m) { m.impl("scaled_add", &scaled_add_cuda); }
#endif
