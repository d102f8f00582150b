// Torch glue for the conformance kernels: op schemas (namespace xcompat_kernels), argument
// checks, and the CPU and Meta implementations. Only the light ATen headers are included
// (not <torch/extension.h>), which keeps this file's compile time to a few seconds; the
// library is loaded with torch.ops.load_library, so no Python binding module is needed.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/zeros.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <cstring>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <string>

#include "../cpu/xk_cpu.h"

// ---- output poisoning ------------------------------------------------------------------
// When enabled (by the conformance runner), every freshly allocated output is filled with
// NaN (mode 1) or a finite sentinel (mode 2) before the kernel runs, so an element the
// kernel forgets to write fails the value check instead of passing on stale memory.
namespace xk_glue {
std::atomic<int64_t> g_poison{0};

int64_t set_poison(int64_t mode) {
  TORCH_CHECK(mode >= 0 && mode <= 2, "xcompat_kernels::set_poison: mode must be 0 (off), 1 (NaN) or 2 (sentinel)");
  return g_poison.exchange(mode);
}

at::Tensor poisoned(at::Tensor out) {
  const int64_t mode = g_poison.load();
  if (mode == 1) out.fill_(std::numeric_limits<double>::quiet_NaN());
  else if (mode == 2) out.fill_(-7680.0);
  return out;
}
}  // namespace xk_glue

namespace {
using xk_glue::poisoned;
using xk_glue::set_poison;

// ---- CPU path selection -------------------------------------------------------------
// The path is chosen once, on first use: XCOMPAT_KERNELS_ISA when set, else the best path
// the CPU supports. A forced path the CPU lacks is an error raised before any kernel runs,
// never a SIGILL.
std::mutex g_isa_mutex;
bool g_isa_ready = false;
xk::Isa g_isa = xk::Isa::scalar;
std::string g_isa_source = "auto";
std::string g_isa_error;

std::string supported_list(bool compiled_only) {
  std::string out;
  for (int i = 0; i < xk::kIsaCount; ++i) {
    const auto isa = static_cast<xk::Isa>(i);
    if (compiled_only ? xk::isa_compiled(isa) : xk::isa_supported(isa)) {
      if (!out.empty()) out += ",";
      out += xk::isa_name(isa);
    }
  }
  return out;
}

std::string check_isa_request(const std::string& name, xk::Isa* isa) {
  if (!xk::isa_from_name(name.c_str(), isa))
    return "unknown CPU path '" + name + "' (choose one of: scalar, avx2, avx512, neon)";
  if (!xk::isa_compiled(*isa))
    return "CPU path '" + name + "' is not built for this architecture (built: " + supported_list(true) + ")";
  if (!xk::isa_supported(*isa))
    return "CPU path '" + name + "' needs instructions this CPU lacks (this CPU runs: " + supported_list(false) + ")";
  return "";
}

void init_isa_locked() {
  if (g_isa_ready) return;
  g_isa_ready = true;
  const char* env = std::getenv("XCOMPAT_KERNELS_ISA");
  if (env != nullptr && *env != '\0' && std::string(env) != "auto") {
    xk::Isa isa;
    const std::string err = check_isa_request(env, &isa);
    g_isa_source = "env";
    if (!err.empty()) {
      g_isa_error = "XCOMPAT_KERNELS_ISA=" + std::string(env) + ": " + err;
      g_isa = xk::Isa::scalar;
      return;
    }
    g_isa = isa;
    return;
  }
  g_isa = xk::isa_best();
  g_isa_source = "auto";
}

const xk::CpuTable* active_table() {
  std::lock_guard<std::mutex> lock(g_isa_mutex);
  init_isa_locked();
  TORCH_CHECK(g_isa_error.empty(), g_isa_error);
  return xk::cpu_table(g_isa);
}

std::string isa_info() {
  std::lock_guard<std::mutex> lock(g_isa_mutex);
  init_isa_locked();
  std::ostringstream os;
  os << "{\"selected\":\"" << xk::isa_name(g_isa) << "\",\"source\":\"" << g_isa_source << "\",\"best\":\""
     << xk::isa_name(xk::isa_best()) << "\",\"supported\":\"" << supported_list(false) << "\",\"compiled\":\""
     << supported_list(true) << "\",\"error\":\"" << g_isa_error << "\"}";
  return os.str();
}

// Select a path explicitly ("auto" = best supported). Returns the previous path's name.
std::string set_isa(const std::string& name) {
  std::lock_guard<std::mutex> lock(g_isa_mutex);
  init_isa_locked();
  const std::string previous = xk::isa_name(g_isa);
  if (name == "auto") {
    g_isa = xk::isa_best();
    g_isa_source = "auto";
    g_isa_error.clear();
    return previous;
  }
  xk::Isa isa;
  const std::string err = check_isa_request(name, &isa);
  TORCH_CHECK(err.empty(), "xcompat_kernels::set_isa: ", err);
  g_isa = isa;
  g_isa_source = "set_isa";
  g_isa_error.clear();
  return previous;
}

// ---- argument checks -----------------------------------------------------------------
xk::Dtype kernel_dtype(const at::Tensor& t, const char* op) {
  switch (t.scalar_type()) {
    case at::kFloat: return xk::Dtype::f32;
    case at::kHalf: return xk::Dtype::f16;
    case at::kBFloat16: return xk::Dtype::bf16;
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

// ---- CPU implementations -----------------------------------------------------------
at::Tensor add_cpu(const at::Tensor& a, const at::Tensor& b) {
  check_like(a, b, "add", "b");
  const auto dt = kernel_dtype(a, "add");
  const auto* t = active_table();
  const auto ac = a.contiguous(), bc = b.contiguous();
  auto out = poisoned(at::empty(a.sizes(), a.options()));
  t->add(ac.data_ptr(), bc.data_ptr(), out.data_ptr(), a.numel(), dt);
  return out;
}

at::Tensor fma_cpu(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c) {
  check_like(a, b, "fma", "b");
  check_like(a, c, "fma", "c");
  const auto dt = kernel_dtype(a, "fma");
  const auto* t = active_table();
  const auto ac = a.contiguous(), bc = b.contiguous(), cc = c.contiguous();
  auto out = poisoned(at::empty(a.sizes(), a.options()));
  t->fma(ac.data_ptr(), bc.data_ptr(), cc.data_ptr(), out.data_ptr(), a.numel(), dt);
  return out;
}

at::Tensor exp_cpu(const at::Tensor& a) {
  const auto dt = kernel_dtype(a, "exp");
  const auto* t = active_table();
  const auto ac = a.contiguous();
  auto out = poisoned(at::empty(a.sizes(), a.options()));
  t->exp(ac.data_ptr(), out.data_ptr(), a.numel(), dt);
  return out;
}

at::Tensor softmax_cpu(const at::Tensor& x) {
  kernel_dtype(x, "softmax");
  const auto* t = active_table();
  const auto xf = x.to(at::kFloat).contiguous();
  auto out = poisoned(at::empty(x.sizes(), x.options().dtype(at::kFloat)));
  const int64_t cols = x.dim() == 0 ? 1 : x.size(-1);
  const int64_t rows = cols == 0 ? 0 : x.numel() / cols;
  if (rows > 0) t->softmax(xf.data_ptr<float>(), out.data_ptr<float>(), rows, cols);
  return x.scalar_type() == at::kFloat ? out : out.to(x.scalar_type());
}

// float16/bfloat16 inputs are accumulated in float32 and the result is rounded once.
at::Tensor sum_cpu(const at::Tensor& x, bool deterministic, int64_t threads) {
  kernel_dtype(x, "sum");
  TORCH_CHECK(threads >= 1 && threads <= 256, "xcompat_kernels::sum: threads must be in [1, 256], got ", threads);
  const auto* t = active_table();
  const auto xc = x.to(at::kFloat).contiguous();
  auto out = poisoned(at::empty({}, xc.options()));
  const float s = deterministic ? t->sum(xc.data_ptr<float>(), xc.numel())
                                : xk::sum_atomic(xc.data_ptr<float>(), xc.numel(), static_cast<int>(threads));
  *out.data_ptr<float>() = s;
  return x.scalar_type() == at::kFloat ? out : out.to(x.scalar_type());
}

void check_scatter_args(const at::Tensor& index, const at::Tensor& weights, int64_t bins) {
  TORCH_CHECK(index.device() == weights.device(), "xcompat_kernels::scatter_add: expected all tensors on the same ",
              "device, got index on ", index.device(), " and weights on ", weights.device());
  TORCH_CHECK(index.scalar_type() == at::kLong, "xcompat_kernels::scatter_add: index must be int64, got ",
              index.scalar_type());
  TORCH_CHECK(weights.scalar_type() == at::kFloat, "xcompat_kernels::scatter_add: weights must be float32, got ",
              weights.scalar_type());
  TORCH_CHECK(index.sizes() == weights.sizes(), "xcompat_kernels::scatter_add: index and weights shapes differ: ",
              index.sizes(), " vs ", weights.sizes());
  TORCH_CHECK(bins >= 0, "xcompat_kernels::scatter_add: bins must be >= 0, got ", bins);
}

at::Tensor scatter_add_cpu(const at::Tensor& index, const at::Tensor& weights, int64_t bins, int64_t threads) {
  check_scatter_args(index, weights, bins);
  TORCH_CHECK(threads >= 1 && threads <= 256, "xcompat_kernels::scatter_add: threads must be in [1, 256]");
  const auto ic = index.contiguous();
  const auto wc = weights.contiguous();
  const int64_t* idx = ic.data_ptr<int64_t>();
  for (int64_t i = 0; i < ic.numel(); ++i)
    TORCH_CHECK(idx[i] >= 0 && idx[i] < bins, "xcompat_kernels::scatter_add: index ", idx[i], " at position ", i,
                " is outside [0, ", bins, ")");
  auto out = at::zeros({bins}, weights.options());
  xk::scatter_add_atomic(idx, wc.data_ptr<float>(), ic.numel(), out.data_ptr<float>(), bins,
                         static_cast<int>(threads));
  return out;
}

// A deliberately wrong kernel kept as a self-test of the harness: it ignores the input
// strides and writes into a buffer laid out like the input. Right on contiguous inputs,
// wrong on transposed or sliced views. opcheck passes it; the value checks must not.
at::Tensor broken_add_stride_cpu(const at::Tensor& a, const at::Tensor& b) {
  check_like(a, b, "_broken_add_stride", "b");
  const auto dt = kernel_dtype(a, "_broken_add_stride");
  const auto* t = active_table();
  auto out = poisoned(at::empty_strided(a.sizes(), a.strides(), a.options()));
  if (a.is_contiguous() && b.is_contiguous()) {
    t->add(a.data_ptr(), b.data_ptr(), out.data_ptr(), a.numel(), dt);
  } else {
    const auto ac = a.contiguous(), bc = b.contiguous();
    auto tmp = at::empty(a.sizes(), a.options());
    t->add(ac.data_ptr(), bc.data_ptr(), tmp.data_ptr(), a.numel(), dt);
    std::memcpy(out.data_ptr(), tmp.data_ptr(), std::min(out.nbytes(), tmp.nbytes()));  // the bug
  }
  return out;
}

// ---- Meta (shape-only) implementations, used by fake tensors and opcheck -------------
at::Tensor add_meta(const at::Tensor& a, const at::Tensor& b) {
  check_like(a, b, "add", "b");
  kernel_dtype(a, "add");
  return at::empty(a.sizes(), a.options());
}
at::Tensor fma_meta(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c) {
  check_like(a, b, "fma", "b");
  check_like(a, c, "fma", "c");
  kernel_dtype(a, "fma");
  return at::empty(a.sizes(), a.options());
}
at::Tensor unary_meta(const at::Tensor& a) {
  kernel_dtype(a, "exp");
  return at::empty(a.sizes(), a.options());
}
at::Tensor sum_meta(const at::Tensor& x, bool, int64_t threads) {
  kernel_dtype(x, "sum");
  TORCH_CHECK(threads >= 1 && threads <= 256, "xcompat_kernels::sum: threads must be in [1, 256], got ", threads);
  return at::empty({}, x.options());
}
at::Tensor scatter_add_meta(const at::Tensor& index, const at::Tensor& weights, int64_t bins, int64_t threads) {
  check_scatter_args(index, weights, bins);
  TORCH_CHECK(threads >= 1 && threads <= 256, "xcompat_kernels::scatter_add: threads must be in [1, 256]");
  return at::empty({bins}, weights.options());
}
at::Tensor broken_add_stride_meta(const at::Tensor& a, const at::Tensor& b) {
  check_like(a, b, "_broken_add_stride", "b");
  return at::empty_strided(a.sizes(), a.strides(), a.options());
}

}  // namespace

TORCH_LIBRARY(xcompat_kernels, m) {
  m.def("add(Tensor a, Tensor b) -> Tensor");
  m.def("fma(Tensor a, Tensor b, Tensor c) -> Tensor");
  m.def("exp(Tensor a) -> Tensor");
  m.def("softmax(Tensor x) -> Tensor");
  m.def("sum(Tensor x, bool deterministic=True, int threads=4) -> Tensor");
  m.def("scatter_add(Tensor index, Tensor weights, int bins, int threads=4) -> Tensor");
  m.def("_broken_add_stride(Tensor a, Tensor b) -> Tensor");
  m.def("isa_info() -> str", &isa_info);
  m.def("set_isa(str name) -> str", &set_isa);
  m.def("set_poison(int mode) -> int", &set_poison);
}

TORCH_LIBRARY_IMPL(xcompat_kernels, CPU, m) {
  m.impl("add", &add_cpu);
  m.impl("fma", &fma_cpu);
  m.impl("exp", &exp_cpu);
  m.impl("softmax", &softmax_cpu);
  m.impl("sum", &sum_cpu);
  m.impl("scatter_add", &scatter_add_cpu);
  m.impl("_broken_add_stride", &broken_add_stride_cpu);
}

TORCH_LIBRARY_IMPL(xcompat_kernels, Meta, m) {
  m.impl("add", &add_meta);
  m.impl("fma", &fma_meta);
  m.impl("exp", &unary_meta);
  m.impl("softmax", &unary_meta);
  m.impl("sum", &sum_meta);
  m.impl("scatter_add", &scatter_add_meta);
  m.impl("_broken_add_stride", &broken_add_stride_meta);
}
