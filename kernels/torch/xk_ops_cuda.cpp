// CUDA (and, hipified, ROCm) implementations of the xcompat_kernels operators. Compiled
// by the host compiler; the kernels themselves are in ../cuda/xk_cuda.cu. Every launch
// goes to torch's current stream, so the ops work under CUDA graph capture and respect
// the stream/event ordering the caller sets up.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGraphsC10Utils.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include "../cuda/xk_cuda.h"

// Output poisoning is shared with the CPU glue (xk_ops.cpp).
namespace xk_glue {
at::Tensor poisoned(at::Tensor out);
}

namespace {
using xk_glue::poisoned;

int dtype_code(const at::Tensor& t, const char* op) {
  switch (t.scalar_type()) {
    case at::kFloat: return 0;
    case at::kHalf: return 1;
    case at::kBFloat16: return 2;
    default: TORCH_CHECK(false, "xcompat_kernels::", op, ": unsupported dtype ", t.scalar_type(),
                         " (expected float32, float16 or bfloat16)");
  }
}

void check_like(const at::Tensor& a, const at::Tensor& b, const char* op, const char* name) {
  TORCH_CHECK(a.device() == b.device(), "xcompat_kernels::", op, ": expected all tensors on the same device, got ",
              name, " on ", b.device(), " and the first input on ", a.device());
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "xcompat_kernels::", op, ": dtype mismatch: ", b.scalar_type(),
              " vs ", a.scalar_type());
  TORCH_CHECK(a.sizes() == b.sizes(), "xcompat_kernels::", op, ": shape mismatch: ", b.sizes(), " vs ", a.sizes());
}

void* stream() { return static_cast<void*>(c10::cuda::getCurrentCUDAStream().stream()); }

void check(int err) { C10_CUDA_CHECK(static_cast<cudaError_t>(err)); }

at::Tensor add_cuda(const at::Tensor& a, const at::Tensor& b) {
  check_like(a, b, "add", "b");
  const int dt = dtype_code(a, "add");
  c10::cuda::CUDAGuard guard(a.device());
  const auto ac = a.contiguous(), bc = b.contiguous();
  auto out = poisoned(at::empty(a.sizes(), a.options()));
  check(xk_cuda::add(dt, ac.data_ptr(), bc.data_ptr(), out.data_ptr(), a.numel(), stream()));
  return out;
}

at::Tensor fma_cuda(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c) {
  check_like(a, b, "fma", "b");
  check_like(a, c, "fma", "c");
  const int dt = dtype_code(a, "fma");
  c10::cuda::CUDAGuard guard(a.device());
  const auto ac = a.contiguous(), bc = b.contiguous(), cc = c.contiguous();
  auto out = poisoned(at::empty(a.sizes(), a.options()));
  check(xk_cuda::fma(dt, ac.data_ptr(), bc.data_ptr(), cc.data_ptr(), out.data_ptr(), a.numel(), stream()));
  return out;
}

at::Tensor exp_cuda(const at::Tensor& a) {
  const int dt = dtype_code(a, "exp");
  c10::cuda::CUDAGuard guard(a.device());
  const auto ac = a.contiguous();
  auto out = poisoned(at::empty(a.sizes(), a.options()));
  check(xk_cuda::exp(dt, ac.data_ptr(), out.data_ptr(), a.numel(), stream()));
  return out;
}

at::Tensor softmax_cuda(const at::Tensor& x) {
  dtype_code(x, "softmax");
  c10::cuda::CUDAGuard guard(x.device());
  const auto xf = x.to(at::kFloat).contiguous();
  auto out = poisoned(at::empty(x.sizes(), x.options().dtype(at::kFloat)));
  const int64_t cols = x.dim() == 0 ? 1 : x.size(-1);
  const int64_t rows = cols == 0 ? 0 : x.numel() / cols;
  check(xk_cuda::softmax(xf.data_ptr<float>(), out.data_ptr<float>(), rows, cols, stream()));
  return x.scalar_type() == at::kFloat ? out : out.to(x.scalar_type());
}

// `threads` is the number of concurrent accumulators, as on the CPU: here, the most thread
// blocks the atomic kernels launch (each block adds its partials into the shared output).
void check_threads(int64_t threads, const char* op) {
  TORCH_CHECK(threads >= 1 && threads <= 256, "xcompat_kernels::", op, ": threads must be in [1, 256], got ", threads);
}

// float16/bfloat16 inputs are accumulated in float32 and the result is rounded once.
at::Tensor sum_cuda(const at::Tensor& x, bool deterministic, int64_t threads) {
  dtype_code(x, "sum");
  check_threads(threads, "sum");
  c10::cuda::CUDAGuard guard(x.device());
  const auto xc = x.to(at::kFloat).contiguous();
  auto out = poisoned(at::empty({}, xc.options()));
  if (deterministic) {
    // the scratch buffer comes from torch's allocator: graph-capture safe, on this stream
    auto scratch = at::empty({xk_cuda::sum_scratch_floats(xc.numel())}, xc.options());
    check(xk_cuda::sum_deterministic(xc.data_ptr<float>(), xc.numel(), scratch.data_ptr<float>(),
                                     out.data_ptr<float>(), stream()));
  } else {
    check(xk_cuda::sum_atomic(xc.data_ptr<float>(), xc.numel(), out.data_ptr<float>(), threads, stream()));
  }
  return x.scalar_type() == at::kFloat ? out : out.to(x.scalar_type());
}

at::Tensor scatter_add_cuda(const at::Tensor& index, const at::Tensor& weights, int64_t bins, int64_t threads) {
  TORCH_CHECK(index.device() == weights.device(), "xcompat_kernels::scatter_add: expected all tensors on the same ",
              "device, got index on ", index.device(), " and weights on ", weights.device());
  TORCH_CHECK(index.scalar_type() == at::kLong, "xcompat_kernels::scatter_add: index must be int64");
  TORCH_CHECK(weights.scalar_type() == at::kFloat, "xcompat_kernels::scatter_add: weights must be float32");
  TORCH_CHECK(index.sizes() == weights.sizes(), "xcompat_kernels::scatter_add: index and weights shapes differ");
  TORCH_CHECK(bins >= 0, "xcompat_kernels::scatter_add: bins must be >= 0, got ", bins);
  check_threads(threads, "scatter_add");
  c10::cuda::CUDAGuard guard(index.device());
  const auto ic = index.contiguous();
  const auto wc = weights.contiguous();
  auto out = poisoned(at::empty({bins}, weights.options()));  // the launcher zeroes it on the stream
  auto bad = at::empty({1}, weights.options().dtype(at::kLong));
  check(xk_cuda::scatter_add(ic.data_ptr<int64_t>(), wc.data_ptr<float>(), ic.numel(), out.data_ptr<float>(), bins,
                             reinterpret_cast<unsigned long long*>(bad.data_ptr<int64_t>()), threads, stream()));
  // Out-of-range indices are counted on the device; reading the count synchronises, so
  // it is skipped while a CUDA graph is being captured.
  if (c10::cuda::currentStreamCaptureStatusMayInitCtx() == c10::cuda::CaptureStatus::None) {
    const int64_t nbad = bad.item<int64_t>();
    TORCH_CHECK(nbad == 0, "xcompat_kernels::scatter_add: ", nbad, " index value(s) outside [0, ", bins, ")");
  }
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(xcompat_kernels, CUDA, m) {
  m.impl("add", &add_cuda);
  m.impl("fma", &fma_cuda);
  m.impl("exp", &exp_cuda);
  m.impl("softmax", &softmax_cuda);
  m.impl("sum", &sum_cuda);
  m.impl("scatter_add", &scatter_add_cuda);
}
