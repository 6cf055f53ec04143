// Naive loops in double for the norms, masked attention, rotary position embeddings and SwiGLU,
// written for clarity, not speed.
#include "kernels/transformer_reference.h"

#include <cmath>
#include <limits>
#include <vector>

namespace mpipe::kernels::reference {
namespace {

using Matrix = std::vector<double>;  // row-major [q_len, kv_len]

// Whether query i of example b may attend to key j.
bool visible(const AttentionShape& shape, const AttentionMask& mask, int64_t b, int64_t i,
             int64_t j) {
  return (!mask.causal || j <= i) && (!mask.key_keep || mask.key_keep[b * shape.kv_len + j] != 0);
}

// Probabilities of one (batch, head) slice of example b: softmax over the visible j of
// q_i · k_j / sqrt(head_dim), all 0 in a row that sees no key.
// q: [q_len, head_dim], k: [kv_len, head_dim] → p: [q_len, kv_len].
Matrix probabilities(const AttentionShape& shape, const AttentionMask& mask, int64_t b,
                     const float* q, const float* k) {
  const int64_t Tq = shape.q_len, Tk = shape.kv_len, D = shape.head_dim;
  Matrix p(static_cast<size_t>(Tq * Tk), 0.0);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  for (int64_t i = 0; i < Tq; ++i) {
    double max = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < Tk; ++j) {
      if (!visible(shape, mask, b, i, j)) continue;
      double s = 0.0;
      for (int64_t e = 0; e < D; ++e) s += double(q[i * D + e]) * k[j * D + e];
      p[i * Tk + j] = s * scale;
      max = std::max(max, p[i * Tk + j]);
    }
    double sum = 0.0;
    for (int64_t j = 0; j < Tk; ++j) {
      if (visible(shape, mask, b, i, j)) sum += p[i * Tk + j] = std::exp(p[i * Tk + j] - max);
    }
    for (int64_t j = 0; j < Tk; ++j) {
      if (visible(shape, mask, b, i, j)) p[i * Tk + j] /= sum;
    }
  }
  return p;
}

double mask_at(const float* mask, int64_t i) { return mask ? double(mask[i]) : 1.0; }

// The key/value slice that query slice s (example s / heads, head s % heads) attends to.
int64_t kv_slice(const AttentionShape& shape, int64_t s) {
  const int64_t kv_heads = kv_heads_of(shape);
  return s / shape.heads * kv_heads + s % shape.heads / (shape.heads / kv_heads);
}

}  // namespace

void layer_norm_forward(const float* x, const float* gamma, const float* beta, float* y,
                        float* mean, float* variance, int64_t rows, int64_t dim, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    double mu = 0.0, var = 0.0;
    for (int64_t j = 0; j < dim; ++j) mu += xr[j];
    mu /= double(dim);
    for (int64_t j = 0; j < dim; ++j) var += (xr[j] - mu) * (xr[j] - mu);
    var /= double(dim);
    const double rstd = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < dim; ++j) {
      y[r * dim + j] = static_cast<float>((xr[j] - mu) * rstd * gamma[j] + beta[j]);
    }
    mean[r] = static_cast<float>(mu);
    variance[r] = static_cast<float>(var);
  }
}

void layer_norm_backward(const float* x, const float* dy, const float* gamma, const float* mean,
                         const float* variance, float* dx, float* dgamma, float* dbeta,
                         int64_t rows, int64_t dim, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    const float* dyr = dy + r * dim;
    const double rstd = 1.0 / std::sqrt(double(variance[r]) + eps);
    // xhat = (x - mean) * rstd; g = dy * gamma; dx = rstd * (g - mean(g) - xhat * mean(g * xhat)).
    double mean_g = 0.0, mean_g_xhat = 0.0;
    for (int64_t j = 0; j < dim; ++j) {
      const double xhat = (xr[j] - double(mean[r])) * rstd;
      const double g = double(dyr[j]) * gamma[j];
      mean_g += g;
      mean_g_xhat += g * xhat;
      dgamma[j] += static_cast<float>(dyr[j] * xhat);
      dbeta[j] += dyr[j];
    }
    mean_g /= double(dim);
    mean_g_xhat /= double(dim);
    for (int64_t j = 0; j < dim; ++j) {
      const double xhat = (xr[j] - double(mean[r])) * rstd;
      const double g = double(dyr[j]) * gamma[j];
      dx[r * dim + j] = static_cast<float>(rstd * (g - mean_g - xhat * mean_g_xhat));
    }
  }
}

void attention_forward(const AttentionShape& shape, const AttentionMask& mask, const float* q,
                       const float* k, const float* v, const float* dropout_mask, float* probs,
                       float* out) {
  const int64_t Tq = shape.q_len, Tk = shape.kv_len, D = shape.head_dim;
  for (int64_t s = 0; s < shape.batch * shape.heads; ++s) {
    const int64_t kv = kv_slice(shape, s);
    const Matrix p = probabilities(shape, mask, s / shape.heads, q + s * Tq * D, k + kv * Tk * D);
    const float* drop = dropout_mask ? dropout_mask + s * Tq * Tk : nullptr;
    for (int64_t i = 0; i < Tq * Tk; ++i) probs[s * Tq * Tk + i] = static_cast<float>(p[i]);
    for (int64_t i = 0; i < Tq; ++i) {
      for (int64_t e = 0; e < D; ++e) {
        double acc = 0.0;
        for (int64_t j = 0; j < Tk; ++j) {
          acc += p[i * Tk + j] * mask_at(drop, i * Tk + j) * v[kv * Tk * D + j * D + e];
        }
        out[s * Tq * D + i * D + e] = static_cast<float>(acc);
      }
    }
  }
}

void attention_backward(const AttentionShape& shape, const AttentionMask& mask, const float* q,
                        const float* k, const float* v, const float* dropout_mask,
                        const float* dout, float* dq, float* dk, float* dv) {
  const int64_t Tq = shape.q_len, Tk = shape.kv_len, D = shape.head_dim;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  // dk and dv summed in double over the query heads that share a key/value head.
  std::vector<double> gk_sum(static_cast<size_t>(shape.batch * kv_heads_of(shape) * Tk * D), 0.0);
  std::vector<double> gv_sum(gk_sum.size(), 0.0);
  for (int64_t s = 0; s < shape.batch * shape.heads; ++s) {
    const int64_t kv = kv_slice(shape, s);
    const float *qs = q + s * Tq * D, *ks = k + kv * Tk * D, *vs = v + kv * Tk * D;
    const float* dos = dout + s * Tq * D;
    const float* drop = dropout_mask ? dropout_mask + s * Tq * Tk : nullptr;
    const Matrix p = probabilities(shape, mask, s / shape.heads, qs, ks);
    // dp[i][j] = drop[i][j] * (dout_i · v_j); ds = p * (dp - sum_j p * dp).
    Matrix ds(static_cast<size_t>(Tq * Tk), 0.0);
    for (int64_t i = 0; i < Tq; ++i) {
      double row = 0.0;
      for (int64_t j = 0; j < Tk; ++j) {
        double dp = 0.0;
        for (int64_t e = 0; e < D; ++e) dp += double(dos[i * D + e]) * vs[j * D + e];
        ds[i * Tk + j] = dp * mask_at(drop, i * Tk + j);
        row += p[i * Tk + j] * ds[i * Tk + j];
      }
      for (int64_t j = 0; j < Tk; ++j) ds[i * Tk + j] = p[i * Tk + j] * (ds[i * Tk + j] - row);
    }
    for (int64_t i = 0; i < Tq; ++i) {
      for (int64_t e = 0; e < D; ++e) {
        double gq = 0.0;
        for (int64_t j = 0; j < Tk; ++j) gq += ds[i * Tk + j] * ks[j * D + e];
        dq[s * Tq * D + i * D + e] = static_cast<float>(gq * scale);
      }
    }
    for (int64_t j = 0; j < Tk; ++j) {
      for (int64_t e = 0; e < D; ++e) {
        double gk = 0.0, gv = 0.0;
        for (int64_t i = 0; i < Tq; ++i) {
          gk += ds[i * Tk + j] * qs[i * D + e];
          gv += p[i * Tk + j] * mask_at(drop, i * Tk + j) * dos[i * D + e];
        }
        gk_sum[static_cast<size_t>(kv * Tk * D + j * D + e)] += gk * scale;
        gv_sum[static_cast<size_t>(kv * Tk * D + j * D + e)] += gv;
      }
    }
  }
  for (size_t i = 0; i < gk_sum.size(); ++i) {
    dk[i] = static_cast<float>(gk_sum[i]);
    dv[i] = static_cast<float>(gv_sum[i]);
  }
}

void rms_norm_forward(const float* x, const float* gamma, float* y, float* rstd, int64_t rows,
                      int64_t dim, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    double mean_sq = 0.0;
    for (int64_t j = 0; j < dim; ++j) mean_sq += double(x[r * dim + j]) * x[r * dim + j];
    mean_sq /= double(dim);
    const double s = 1.0 / std::sqrt(mean_sq + eps);
    for (int64_t j = 0; j < dim; ++j)
      y[r * dim + j] = static_cast<float>(x[r * dim + j] * s * gamma[j]);
    rstd[r] = static_cast<float>(s);
  }
}

void rms_norm_backward(const float* x, const float* dy, const float* gamma, float* dx,
                       float* dgamma, int64_t rows, int64_t dim, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    double mean_sq = 0.0;
    for (int64_t j = 0; j < dim; ++j) mean_sq += double(x[r * dim + j]) * x[r * dim + j];
    mean_sq /= double(dim);
    const double s = 1.0 / std::sqrt(mean_sq + eps);
    // y_j = g_j x_j s with ds/dx_k = -s^3 x_k / dim:
    // dx_k = s g_k dy_k - s^3 x_k / dim * sum_j g_j dy_j x_j.
    double dot = 0.0;
    for (int64_t j = 0; j < dim; ++j) dot += double(gamma[j]) * dy[r * dim + j] * x[r * dim + j];
    for (int64_t k = 0; k < dim; ++k) {
      dx[r * dim + k] = static_cast<float>(s * gamma[k] * dy[r * dim + k] -
                                           s * s * s * x[r * dim + k] / double(dim) * dot);
    }
    for (int64_t j = 0; j < dim; ++j) {
      dgamma[j] = static_cast<float>(dgamma[j] + double(dy[r * dim + j]) * x[r * dim + j] * s);
    }
  }
}

void rotary_apply(const float* x, float* out, int64_t slices, int64_t seq, int64_t head_dim,
                  double base, bool inverse) {
  const int64_t half = head_dim / 2;
  for (int64_t s = 0; s < slices; ++s) {
    for (int64_t t = 0; t < seq; ++t) {
      const float* in = x + (s * seq + t) * head_dim;
      float* o = out + (s * seq + t) * head_dim;
      for (int64_t i = 0; i < half; ++i) {
        const double angle = (inverse ? -1.0 : 1.0) * double(t) *
                             std::pow(base, -2.0 * double(i) / double(head_dim));
        const double a = in[i], b = in[i + half];
        o[i] = static_cast<float>(a * std::cos(angle) - b * std::sin(angle));
        o[i + half] = static_cast<float>(b * std::cos(angle) + a * std::sin(angle));
      }
    }
  }
}

void swiglu_forward(const float* gate_up, float* out, int64_t rows, int64_t hidden) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < hidden; ++j) {
      const double g = gate_up[r * 2 * hidden + j], up = gate_up[r * 2 * hidden + hidden + j];
      out[r * hidden + j] = static_cast<float>(g / (1.0 + std::exp(-g)) * up);
    }
  }
}

void swiglu_backward(const float* gate_up, const float* dout, float* dgate_up, int64_t rows,
                     int64_t hidden) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < hidden; ++j) {
      const double g = gate_up[r * 2 * hidden + j], up = gate_up[r * 2 * hidden + hidden + j];
      const double sigmoid = 1.0 / (1.0 + std::exp(-g));
      const double d = dout[r * hidden + j];
      // d(g sigmoid(g))/dg = sigmoid(g) + g sigmoid(g) (1 - sigmoid(g)).
      dgate_up[r * 2 * hidden + j] =
          static_cast<float>(d * up * (sigmoid + g * sigmoid * (1.0 - sigmoid)));
      dgate_up[r * 2 * hidden + hidden + j] = static_cast<float>(d * g * sigmoid);
    }
  }
}

}  // namespace mpipe::kernels::reference
