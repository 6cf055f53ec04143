// Naive loops with double accumulation for convolution, batch norm and pooling (test oracle).
#include "kernels/conv_reference.h"

#include <cmath>
#include <limits>
#include <vector>

namespace mpipe::kernels::reference {
namespace {

// Index of element (n, c, h, w) in an NCHW tensor of channels x height x width images.
int64_t at(int64_t n, int64_t c, int64_t h, int64_t w, int64_t channels, int64_t height,
           int64_t width) {
  return ((n * channels + c) * height + h) * width + w;
}

// Calls visit(x_index, w_index, y_index) for every (input, weight, output) triple that one
// multiply-add of the convolution touches.
template <typename Visit>
void for_each_tap(const Conv2dShape& s, Visit visit) {
  const int64_t in_per_group = s.in_channels / s.groups;
  const int64_t out_per_group = s.out_channels / s.groups;
  const int64_t oh_count = s.out_height(), ow_count = s.out_width();
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t o = 0; o < s.out_channels; ++o) {
      const int64_t g = o / out_per_group;
      for (int64_t oh = 0; oh < oh_count; ++oh) {
        for (int64_t ow = 0; ow < ow_count; ++ow) {
          const int64_t y_index = at(n, o, oh, ow, s.out_channels, oh_count, ow_count);
          for (int64_t ci = 0; ci < in_per_group; ++ci) {
            for (int64_t kh = 0; kh < s.kernel_h; ++kh) {
              const int64_t ih = oh * s.stride_h - s.pad_h + kh * s.dilation_h;
              if (ih < 0 || ih >= s.height) continue;
              for (int64_t kw = 0; kw < s.kernel_w; ++kw) {
                const int64_t iw = ow * s.stride_w - s.pad_w + kw * s.dilation_w;
                if (iw < 0 || iw >= s.width) continue;
                const int64_t x_index =
                    at(n, g * in_per_group + ci, ih, iw, s.in_channels, s.height, s.width);
                const int64_t w_index =
                    ((o * in_per_group + ci) * s.kernel_h + kh) * s.kernel_w + kw;
                visit(x_index, w_index, y_index);
              }
            }
          }
        }
      }
    }
  }
}

void store(const std::vector<double>& values, float* out) {
  for (size_t i = 0; i < values.size(); ++i) out[i] = static_cast<float>(values[i]);
}

void add(const std::vector<double>& values, float* out) {
  for (size_t i = 0; i < values.size(); ++i) {
    out[i] = static_cast<float>(static_cast<double>(out[i]) + values[i]);
  }
}

// Calls visit(c, index) for every element of channel c of an NCHW batch-norm tensor.
template <typename Visit>
void for_each_in_channel(const BatchNormShape& s, int64_t c, Visit visit) {
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t i = 0; i < s.height * s.width; ++i) {
      visit(at(n, c, 0, 0, s.channels, s.height, s.width) + i);
    }
  }
}

// Calls visit(y_index, x_index) for every in-bounds input element of every pooling window, and
// window(y_index, count) once per window with its number of in-bounds elements.
template <typename Window, typename Visit>
void for_each_window(const Pool2dShape& s, Window window, Visit visit) {
  const int64_t oh_count = s.out_height(), ow_count = s.out_width();
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t c = 0; c < s.channels; ++c) {
      for (int64_t oh = 0; oh < oh_count; ++oh) {
        for (int64_t ow = 0; ow < ow_count; ++ow) {
          const int64_t y_index = at(n, c, oh, ow, s.channels, oh_count, ow_count);
          int64_t count = 0;
          for (int64_t kh = 0; kh < s.kernel_h; ++kh) {
            const int64_t ih = oh * s.stride_h - s.pad_h + kh;
            if (ih < 0 || ih >= s.height) continue;
            for (int64_t kw = 0; kw < s.kernel_w; ++kw) {
              const int64_t iw = ow * s.stride_w - s.pad_w + kw;
              if (iw < 0 || iw >= s.width) continue;
              visit(y_index, at(n, c, ih, iw, s.channels, s.height, s.width));
              ++count;
            }
          }
          window(y_index, count);
        }
      }
    }
  }
}

double avg_divisor(const Pool2dShape& s, int64_t in_bounds) {
  return s.kind == PoolKind::kAvgIncludePadding ? static_cast<double>(s.kernel_h * s.kernel_w)
                                                : static_cast<double>(in_bounds);
}

}  // namespace

void conv2d_forward(const Conv2dShape& s, const float* x, const float* w, const float* bias,
                    float* y) {
  std::vector<double> acc(
      static_cast<size_t>(s.batch * s.out_channels * s.out_height() * s.out_width()));
  for_each_tap(s, [&](int64_t xi, int64_t wi, int64_t yi) {
    acc[static_cast<size_t>(yi)] += static_cast<double>(x[xi]) * w[wi];
  });
  if (bias) {
    const int64_t plane = s.out_height() * s.out_width();
    for (size_t i = 0; i < acc.size(); ++i) {
      acc[i] += bias[(static_cast<int64_t>(i) / plane) % s.out_channels];
    }
  }
  store(acc, y);
}

void conv2d_backward_data(const Conv2dShape& s, const float* dy, const float* w, float* dx) {
  std::vector<double> acc(static_cast<size_t>(s.batch * s.in_channels * s.height * s.width));
  for_each_tap(s, [&](int64_t xi, int64_t wi, int64_t yi) {
    acc[static_cast<size_t>(xi)] += static_cast<double>(dy[yi]) * w[wi];
  });
  store(acc, dx);
}

void conv2d_backward_weights(const Conv2dShape& s, const float* x, const float* dy, float* dw,
                             float* dbias) {
  std::vector<double> acc(
      static_cast<size_t>(s.out_channels * (s.in_channels / s.groups) * s.kernel_h * s.kernel_w));
  for_each_tap(s, [&](int64_t xi, int64_t wi, int64_t yi) {
    acc[static_cast<size_t>(wi)] += static_cast<double>(dy[yi]) * x[xi];
  });
  add(acc, dw);
  if (!dbias) return;
  const int64_t plane = s.out_height() * s.out_width();
  std::vector<double> bias_acc(static_cast<size_t>(s.out_channels));
  for (int64_t i = 0; i < s.batch * s.out_channels * plane; ++i) {
    bias_acc[static_cast<size_t>((i / plane) % s.out_channels)] += dy[i];
  }
  add(bias_acc, dbias);
}

void batch_norm_forward_training(const BatchNormShape& s, const float* x, const float* gamma,
                                 const float* beta, float* y, float* mean, float* variance) {
  const auto count = static_cast<double>(s.per_channel());
  for (int64_t c = 0; c < s.channels; ++c) {
    double sum = 0.0;
    for_each_in_channel(s, c, [&](int64_t i) { sum += x[i]; });
    const double mu = sum / count;
    double squares = 0.0;
    for_each_in_channel(s, c, [&](int64_t i) { squares += (x[i] - mu) * (x[i] - mu); });
    mean[c] = static_cast<float>(mu);
    variance[c] = static_cast<float>(squares / count);
  }
  batch_norm_forward_inference(s, x, gamma, beta, mean, variance, y);
}

void batch_norm_forward_inference(const BatchNormShape& s, const float* x, const float* gamma,
                                  const float* beta, const float* mean, const float* variance,
                                  float* y) {
  for (int64_t c = 0; c < s.channels; ++c) {
    const double inv_std = 1.0 / std::sqrt(static_cast<double>(variance[c]) + s.eps);
    for_each_in_channel(s, c, [&](int64_t i) {
      y[i] = static_cast<float>(gamma[c] * (x[i] - mean[c]) * inv_std + beta[c]);
    });
  }
}

void batch_norm_backward(const BatchNormShape& s, bool batch_statistics, const float* x,
                         const float* dy, const float* gamma, const float* mean,
                         const float* variance, float* dx, float* dgamma, float* dbeta) {
  const auto count = static_cast<double>(s.per_channel());
  for (int64_t c = 0; c < s.channels; ++c) {
    const double inv_std = 1.0 / std::sqrt(static_cast<double>(variance[c]) + s.eps);
    double sum_dy = 0.0, sum_dy_xhat = 0.0;
    for_each_in_channel(s, c, [&](int64_t i) {
      sum_dy += dy[i];
      sum_dy_xhat += dy[i] * (x[i] - mean[c]) * inv_std;
    });
    for_each_in_channel(s, c, [&](int64_t i) {
      const double xhat = (x[i] - mean[c]) * inv_std;
      const double centered =
          batch_statistics ? dy[i] - sum_dy / count - xhat * sum_dy_xhat / count : dy[i];
      dx[i] = static_cast<float>(gamma[c] * inv_std * centered);
    });
    dgamma[c] = static_cast<float>(dgamma[c] + sum_dy_xhat);
    dbeta[c] = static_cast<float>(dbeta[c] + sum_dy);
  }
}

void pool2d_forward(const Pool2dShape& s, const float* x, float* y) {
  const size_t out_count =
      static_cast<size_t>(s.batch * s.channels * s.out_height() * s.out_width());
  std::vector<double> acc(
      out_count, s.kind == PoolKind::kMax ? -std::numeric_limits<double>::infinity() : 0.0);
  for_each_window(
      s,
      [&](int64_t yi, int64_t count) {
        if (s.kind != PoolKind::kMax) acc[static_cast<size_t>(yi)] /= avg_divisor(s, count);
      },
      [&](int64_t yi, int64_t xi) {
        double& a = acc[static_cast<size_t>(yi)];
        a = s.kind == PoolKind::kMax ? std::max(a, static_cast<double>(x[xi])) : a + x[xi];
      });
  store(acc, y);
}

void pool2d_backward(const Pool2dShape& s, const float* x, const float* dy, float* dx) {
  std::vector<double> acc(static_cast<size_t>(s.batch * s.channels * s.height * s.width));
  if (s.kind == PoolKind::kMax) {
    std::vector<int64_t> argmax(
        static_cast<size_t>(s.batch * s.channels * s.out_height() * s.out_width()), -1);
    for_each_window(
        s,
        [&](int64_t yi, int64_t) {
          acc[static_cast<size_t>(argmax[static_cast<size_t>(yi)])] += dy[yi];
        },
        [&](int64_t yi, int64_t xi) {
          int64_t& best = argmax[static_cast<size_t>(yi)];
          if (best < 0 || x[xi] > x[best]) best = xi;
        });
  } else {
    std::vector<int64_t> window_of;  // x indices of the current window
    for_each_window(
        s,
        [&](int64_t yi, int64_t count) {
          for (int64_t xi : window_of) {
            acc[static_cast<size_t>(xi)] += dy[yi] / avg_divisor(s, count);
          }
          window_of.clear();
        },
        [&](int64_t, int64_t xi) { window_of.push_back(xi); });
  }
  store(acc, dx);
}

namespace {

// f(x index, y index) for every output pixel of an upsampling.
template <typename F>
void for_each_upsampled(const Upsample2dShape& s, F&& f) {
  const int64_t out_h = s.height * s.scale, out_w = s.width * s.scale;
  for (int64_t plane = 0; plane < s.batch * s.channels; ++plane) {
    for (int64_t i = 0; i < out_h; ++i) {
      for (int64_t j = 0; j < out_w; ++j) {
        f((plane * s.height + i / s.scale) * s.width + j / s.scale,
          (plane * out_h + i) * out_w + j);
      }
    }
  }
}

}  // namespace

void upsample2d_forward(const Upsample2dShape& shape, const float* x, float* y) {
  for_each_upsampled(shape, [&](int64_t xi, int64_t yi) { y[yi] = x[xi]; });
}

void upsample2d_backward(const Upsample2dShape& shape, const float* dy, float* dx) {
  std::vector<double> acc(
      static_cast<size_t>(shape.batch * shape.channels * shape.height * shape.width));
  for_each_upsampled(shape,
                     [&](int64_t xi, int64_t yi) { acc[static_cast<size_t>(xi)] += dy[yi]; });
  store(acc, dx);
}

}  // namespace mpipe::kernels::reference
