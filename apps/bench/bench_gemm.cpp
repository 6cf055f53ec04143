// One product, timed: y[rows, out] = x[rows, in] · w^T as a Linear's forward runs it (oneDNN f32
// matmul, mpipe's tensors), in GFLOP/s; optionally inside MPI_Init/MPI_Finalize as a rank is.
// Prints one line; asserts nothing about time (scripts/bench/gemm_processes.sh runs it many times).
#include <fmt/format.h>
#include <mpi.h>
#include <sched.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <dnnl.hpp>
#include <vector>

#include "bench_timing.h"
#include "core/tensor.h"
#include "kernels/context.h"

namespace {

using namespace mpipe;

struct Options {
  int64_t rows = 16, in = 1024, out = 1024;
  int weights = 1;  // distinct weights taken in turn (a stage's layers: each streamed from memory)
  double seconds = 0.5;
  bool mpi = false;
};

double gflops(const Options& o) {
  kernels::KernelContext ctx;
  using dnnl::memory;
  const memory::desc a({o.rows, o.in}, memory::data_type::f32, memory::format_tag::ab);
  const memory::desc b({o.in, o.out}, memory::data_type::f32, {1, o.in});  // [out, in], read w^T
  const memory::desc c({o.rows, o.out}, memory::data_type::f32, memory::format_tag::ab);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), ctx.engine());
  const dnnl::matmul primitive(pd);
  Tensor x(Shape{o.rows, o.in}), y(Shape{o.rows, o.out});
  x.fill(0.5f);
  std::vector<Tensor> w;
  std::vector<memory> wm;
  for (int i = 0; i < o.weights; ++i) {
    w.emplace_back(Shape{o.out, o.in}).fill(0.25f);
    wm.emplace_back(b, ctx.engine(), w.back().data());
  }
  const memory xm(a, ctx.engine(), x.data()), ym(c, ctx.engine(), y.data());
  size_t next = 0;
  const double s = bench::seconds_per_call(
      [&] {
        primitive.execute(ctx.stream(),
                          {{DNNL_ARG_SRC, xm}, {DNNL_ARG_WEIGHTS, wm[next]}, {DNNL_ARG_DST, ym}});
        ctx.stream().wait();
        next = (next + 1) % wm.size();
      },
      o.seconds);
  return 2.0 * static_cast<double>(o.rows * o.in * o.out) / s * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app("One oneDNN f32 product (a Linear's forward), timed, in GFLOP/s");
  app.add_option("--rows", o.rows, "rows of x (a micro-batch)")->check(CLI::PositiveNumber);
  app.add_option("--in", o.in, "features in")->check(CLI::PositiveNumber);
  app.add_option("--out", o.out, "features out")->check(CLI::PositiveNumber);
  app.add_option("--weights", o.weights, "distinct weights taken in turn")
      ->check(CLI::PositiveNumber);
  app.add_option("--seconds", o.seconds, "time at least this long")->check(CLI::PositiveNumber);
  app.add_flag("--mpi", o.mpi, "inside MPI_Init and MPI_Finalize, as an mpipe rank is");
  CLI11_PARSE(app, argc, argv);
  if (o.mpi) MPI_Init(&argc, &argv);
  const double rate = gflops(o);
  fmt::print("gemm {} x {} -> {} f32, {} weight(s), threads {}, cpu {}{}: {:.1f} GFLOP/s\n", o.rows,
             o.in, o.out, o.weights, bench::thread_count(), sched_getcpu(), o.mpi ? ", in MPI" : "",
             rate);
  if (o.mpi) MPI_Finalize();
  return 0;
}
