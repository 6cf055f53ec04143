// The GEMM peak and a linear layer's product rates: timed repetitions of oneDNN matmuls.
#include "kernels/gemm_peak.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <new>
#include <vector>

namespace mpipe::kernels {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A 64-byte aligned float buffer filled with one value.
class AlignedFloats {
 public:
  AlignedFloats(int64_t count, float value)
      : data(static_cast<float*>(
            ::operator new(static_cast<size_t>(count) * sizeof(float), kAlignment))) {
    std::fill_n(data, count, value);
  }
  ~AlignedFloats() { ::operator delete(data, kAlignment); }
  AlignedFloats(const AlignedFloats&) = delete;
  AlignedFloats& operator=(const AlignedFloats&) = delete;

  float* const data;

 private:
  static constexpr std::align_val_t kAlignment{64};
};

}  // namespace

double measure_gemm_rate(KernelContext& kernels, const MatmulShape& shape, double min_seconds) {
  // 64-byte aligned like every tensor of a run (the rate depends on it: heap vectors ran at half
  // the rate in some processes), but not Tensors, which the run's memory account would count;
  // operands of ordinary magnitude (no denormals, which some CPUs compute slowly).
  AlignedFloats a(shape.m * shape.k, 0.5f), b(shape.k * shape.n, 0.25f), c(shape.m * shape.n, 0.0f);
  const double flops = 2.0 * static_cast<double>(shape.m) * static_cast<double>(shape.k) *
                       static_cast<double>(shape.n);
  const Clock::time_point start = Clock::now();
  matmul(kernels, shape, a.data, b.data, c.data);  // warm-up: the primitive, the pages
  double fastest_s = 0.0;
  for (int repetition = 0; repetition < 3 || seconds_since(start) < min_seconds; ++repetition) {
    const Clock::time_point begin = Clock::now();
    matmul(kernels, shape, a.data, b.data, c.data);
    const double s = seconds_since(begin);
    fastest_s = repetition == 0 ? s : std::min(fastest_s, s);
  }
  return flops / fastest_s;
}

GemmPeak measure_gemm_peak(KernelContext& kernels, int64_t size, double min_seconds) {
  const Clock::time_point start = Clock::now();
  const double rate =
      measure_gemm_rate(kernels, {.batch = 1, .m = size, .k = size, .n = size}, min_seconds);
  return {.flops_per_s = rate,
          .size = size,
          .threads = omp_get_max_threads(),
          .seconds = seconds_since(start)};
}

namespace {

// A fully connected layer's operands for products of up to `most_rows` rows, with its weights and
// their gradient in copies, `streamed_bytes` in all (see measure_linear_rates): the copies made
// once for every product timed on them.
class LinearOperands {
 public:
  LinearOperands(int64_t most_rows, int64_t in, int64_t out, double streamed_bytes)
      : in_(in),
        out_(out),
        x_(most_rows * in, 0.5f),
        y_(most_rows * out, 0.0f),
        dy_(most_rows * out, 0.01f),
        dx_(most_rows * in, 0.0f) {
    const int64_t weight_floats = in * out;
    for (int64_t c = 0; c < weight_copies(streamed_bytes, in, out); ++c) {
      weights_.push_back(std::make_unique<AlignedFloats>(weight_floats, 0.25f));
      grads_.push_back(std::make_unique<AlignedFloats>(weight_floats, 0.0f));
    }
  }

  size_t copies() const { return weights_.size(); }
  double flops(int64_t rows) const {
    return 2.0 * static_cast<double>(rows) * static_cast<double>(in_) * static_cast<double>(out_);
  }
  void forward(KernelContext& kernels, int64_t rows, size_t c) {
    linear_forward(kernels, x_.data, weights_[c]->data, nullptr, y_.data, rows, in_, out_);
  }
  void input_gradient(KernelContext& kernels, int64_t rows, size_t c) {
    linear_backward_data(kernels, dy_.data, weights_[c]->data, dx_.data, rows, in_, out_);
  }
  void weight_gradient(KernelContext& kernels, int64_t rows, size_t c) {
    linear_backward_weights(kernels, x_.data, dy_.data, grads_[c]->data, nullptr, rows, in_, out_);
  }

  // The median repetition's FLOP/s of `product` over `rows` rows (run on copy r % copies), after
  // one run on each copy and, from `warm_up_seconds`, more until that long has passed.
  template <typename Product>
  double median_rate(const Product& product, int64_t rows, double min_seconds, int cycles,
                     double warm_up_seconds) {
    const Clock::time_point warm_up = Clock::now();
    for (size_t r = 0; r < copies() || seconds_since(warm_up) < warm_up_seconds; ++r) {
      product(rows, r % copies());
    }
    std::vector<double> times;
    const Clock::time_point start = Clock::now();
    for (size_t r = 0;
         r < static_cast<size_t>(cycles) * copies() || seconds_since(start) < min_seconds; ++r) {
      const Clock::time_point begin = Clock::now();
      product(rows, r % copies());
      times.push_back(seconds_since(begin));
    }
    const auto middle = times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2);
    std::ranges::nth_element(times, middle);
    return flops(rows) / *middle;
  }

 private:
  int64_t in_, out_;
  std::vector<std::unique_ptr<AlignedFloats>> weights_, grads_;
  AlignedFloats x_, y_, dy_, dx_;
};

}  // namespace

int64_t weight_copies(double streamed_bytes, int64_t in, int64_t out) {
  constexpr double kMostBytes = 512.0 * (1 << 20);
  const double copy_bytes =
      2.0 * sizeof(float) * static_cast<double>(in) * static_cast<double>(out);
  constexpr double kMostCopies = 64.0;
  return static_cast<int64_t>(
      std::clamp(std::min(streamed_bytes, kMostBytes) / copy_bytes, 2.0, kMostCopies));
}

LinearRates measure_linear_rates(KernelContext& kernels, int64_t rows, int64_t in, int64_t out,
                                 double min_seconds, int cycles, double warm_up_seconds,
                                 double streamed_bytes, int64_t deferred_rows) {
  LinearOperands operands(std::max(rows, deferred_rows), in, out, streamed_bytes);
  const auto rate = [&](auto product, int64_t product_rows, double warm_up) {
    return operands.median_rate([&](int64_t r, size_t c) { (operands.*product)(kernels, r, c); },
                                product_rows, min_seconds, cycles, warm_up);
  };
  return {.forward = rate(&LinearOperands::forward, rows, warm_up_seconds),
          .input_gradient = rate(&LinearOperands::input_gradient, rows, 0.0),
          .weight_gradient = rate(&LinearOperands::weight_gradient, rows, 0.0),
          .deferred_weight_gradient =
              deferred_rows > 0 ? rate(&LinearOperands::weight_gradient, deferred_rows, 0.0) : 0.0};
}

}  // namespace mpipe::kernels
