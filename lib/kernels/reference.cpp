// Naive reference kernels: straightforward loops in double, written for clarity, not speed.
#include "kernels/reference.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "core/error.h"

namespace mpipe::kernels::reference {

void matmul(const MatmulShape& shape, const float* a, const float* b, float* c, float alpha,
            float beta) {
  const int64_t m = shape.m, k = shape.k, n = shape.n;
  for (int64_t batch = 0; batch < shape.batch; ++batch) {
    const float* ab = a + batch * m * k;
    const float* bb = b + batch * k * n;
    float* cb = c + batch * m * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0.0;
        for (int64_t p = 0; p < k; ++p) {
          const double av = shape.transpose_a ? ab[p * m + i] : ab[i * k + p];
          const double bv = shape.transpose_b ? bb[j * k + p] : bb[p * n + j];
          sum += av * bv;
        }
        const double previous = beta == 0.0f ? 0.0 : beta * static_cast<double>(cb[i * n + j]);
        cb[i * n + j] = static_cast<float>(alpha * sum + previous);
      }
    }
  }
}

void linear_forward(const float* x, const float* w, const float* bias, float* y, int64_t rows,
                    int64_t in, int64_t out) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      double sum = bias ? bias[o] : 0.0;
      for (int64_t i = 0; i < in; ++i) sum += static_cast<double>(x[r * in + i]) * w[o * in + i];
      y[r * out + o] = static_cast<float>(sum);
    }
  }
}

void linear_backward_data(const float* dy, const float* w, float* dx, int64_t rows, int64_t in,
                          int64_t out) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < in; ++i) {
      double sum = 0.0;
      for (int64_t o = 0; o < out; ++o) sum += static_cast<double>(dy[r * out + o]) * w[o * in + i];
      dx[r * in + i] = static_cast<float>(sum);
    }
  }
}

void linear_backward_weights(const float* x, const float* dy, float* dw, float* dbias, int64_t rows,
                             int64_t in, int64_t out) {
  for (int64_t o = 0; o < out; ++o) {
    for (int64_t i = 0; i < in; ++i) {
      double sum = dw[o * in + i];
      for (int64_t r = 0; r < rows; ++r)
        sum += static_cast<double>(dy[r * out + o]) * x[r * in + i];
      dw[o * in + i] = static_cast<float>(sum);
    }
    if (dbias) {
      double sum = dbias[o];
      for (int64_t r = 0; r < rows; ++r) sum += dy[r * out + o];
      dbias[o] = static_cast<float>(sum);
    }
  }
}

namespace {

// GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
constexpr double kGeluC = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kGeluA = 0.044715;

double activation(EltwiseKind kind, double x) {
  switch (kind) {
    case EltwiseKind::kRelu:
      return x > 0.0 ? x : 0.0;
    case EltwiseKind::kGelu:
      return 0.5 * x * (1.0 + std::tanh(kGeluC * (x + kGeluA * x * x * x)));
    case EltwiseKind::kTanh:
      return std::tanh(x);
  }
  throw Error("unknown eltwise kind");
}

double derivative(EltwiseKind kind, double x) {
  switch (kind) {
    case EltwiseKind::kRelu:
      return x > 0.0 ? 1.0 : 0.0;
    case EltwiseKind::kGelu: {
      const double t = std::tanh(kGeluC * (x + kGeluA * x * x * x));
      return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * kGeluC * (1.0 + 3.0 * kGeluA * x * x);
    }
    case EltwiseKind::kTanh: {
      const double t = std::tanh(x);
      return 1.0 - t * t;
    }
  }
  throw Error("unknown eltwise kind");
}

}  // namespace

void eltwise_forward(EltwiseKind kind, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(activation(kind, x[i]));
}

void eltwise_backward(EltwiseKind kind, const float* x, const float* dy, float* dx, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dx[i] = static_cast<float>(derivative(kind, x[i]) * dy[i]);
}

SoftmaxCrossEntropyResult softmax_cross_entropy(const float* logits, const float* targets,
                                                int64_t rows, int64_t classes, float grad_scale,
                                                float* grad, const CrossEntropyOptions& options) {
  SoftmaxCrossEntropyResult result;
  const double eps = options.label_smoothing;
  for (int64_t r = 0; r < rows; ++r) {
    const float* z = logits + r * classes;
    if (options.ignore_target && targets[r] == static_cast<float>(*options.ignore_target)) {
      if (grad) std::fill(grad + r * classes, grad + (r + 1) * classes, 0.0f);
      continue;
    }
    ++result.counted;
    const auto target = static_cast<int64_t>(targets[r]);
    check_input(targets[r] == static_cast<float>(target) && target >= 0 && target < classes,
                "target {} of row {} is not a class index in [0, {})", targets[r], r, classes);
    int64_t argmax = 0;
    for (int64_t c = 1; c < classes; ++c) {
      if (z[c] > z[argmax]) argmax = c;
    }
    double sum = 0.0;
    for (int64_t c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(z[c]) - z[argmax]);
    const double log_sum_exp = z[argmax] + std::log(sum);
    // The target distribution q = (1 - eps)·onehot + eps / classes; the loss -Σ q·log p.
    const auto q = [&](int64_t c) {
      return (c == target ? 1.0 - eps : 0.0) + eps / static_cast<double>(classes);
    };
    for (int64_t c = 0; c < classes; ++c) result.loss_sum += q(c) * (log_sum_exp - z[c]);
    if (argmax == target) ++result.correct;
    if (grad) {
      for (int64_t c = 0; c < classes; ++c) {
        const double p = std::exp(static_cast<double>(z[c]) - log_sum_exp);
        grad[r * classes + c] = static_cast<float>(grad_scale * (p - q(c)));
      }
    }
  }
  return result;
}

}  // namespace mpipe::kernels::reference
