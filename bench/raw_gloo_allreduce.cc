#include <gloo/allreduce.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include "core/config.h"
#include "ops/gloo_split.h"
#include "ops/mpi_backend.h"
#include "raw_allreduce.h"
#include "rendezvous/client.h"
#include "rendezvous/gloo_store.h"

namespace cohort::bench {
namespace {

using Context = std::shared_ptr<gloo::Context>;

// Legacy algorithms bind to their buffer: build once per (buffer, count) and reuse, as a user
// calling Gloo directly would. The benchmark calls every algorithm in the same order on all ranks.
template <typename Algorithm>
class LegacyAllreduce final : public RawAllreduce {
 public:
  LegacyAllreduce(Context context, std::string name, size_t min_bytes)
      : context_(std::move(context)), name_(std::move(name)), min_bytes_(min_bytes) {}
  std::string name() const override { return name_; }
  size_t min_bytes() const override { return min_bytes_; }
  void run(float* buffer, size_t count) override {
    if (!algorithm_ || buffer != buffer_ || count != count_) {
      algorithm_.reset();
      algorithm_ = std::make_unique<Algorithm>(context_, std::vector<float*>{buffer},
                                               static_cast<int>(count));
      buffer_ = buffer;
      count_ = count;
    }
    algorithm_->run();
  }

 private:
  Context context_;
  std::string name_;
  size_t min_bytes_;
  std::unique_ptr<Algorithm> algorithm_;
  float* buffer_ = nullptr;
  size_t count_ = 0;
};

class NewApiRing final : public RawAllreduce {
 public:
  explicit NewApiRing(Context context) : context_(std::move(context)) {}
  std::string name() const override { return "gloo::allreduce (ring)"; }
  // Below 4 MiB this ring takes 1-4 ms per operation on a 2-core machine and leaves Gloo's
  // device thread spinning, which slows whatever runs next (shared/research/environment.md §3).
  size_t min_bytes() const override { return 4u << 20; }
  void run(float* buffer, size_t count) override {
    gloo::AllreduceOptions opts(context_);
    opts.setOutput(buffer, count);
    opts.setReduceFunction(
        static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
    opts.setTag(tag_++);
    gloo::allreduce(opts);
  }

 private:
  Context context_;
  uint32_t tag_ = 0;
};

// Through cohortrun's rendezvous, or under mpirun through MPI (as Cohort's Gloo is bootstrapped
// there), so that raw Gloo and raw MPI can run beside Cohort in one job.
Context connect() {
  Config c = Config::from_environment();
  if (c.launcher == Config::Launcher::kMpirun) {
    auto mpi = ops::make_mpi_backend();
    return ops::connect_gloo_through(*mpi, c.hostname, c.timeout);
  }
  rendezvous::RendezvousClient client(c.rendezvous_addr, c.rendezvous_port, c.secret, c.timeout);
  rendezvous::GlooStore store(client, c.timeout);
  gloo::rendezvous::PrefixStore prefixed("bench-raw-gloo", store);
  gloo::transport::tcp::attr attr;
  attr.hostname = c.hostname;
  auto device = gloo::transport::tcp::CreateDevice(attr);
  auto context = std::make_shared<gloo::rendezvous::Context>(c.placement.rank, c.placement.size);
  context->setTimeout(c.timeout);
  context->connectFullMesh(prefixed, device);
  return context;
}

}  // namespace

std::vector<std::unique_ptr<RawAllreduce>> make_raw_gloo_allreduces() {
  Context context = connect();
  std::vector<std::unique_ptr<RawAllreduce>> out;
  out.push_back(std::make_unique<LegacyAllreduce<gloo::AllreduceHalvingDoubling<float>>>(
      context, "gloo halving-doubling", 0));
  out.push_back(std::make_unique<LegacyAllreduce<gloo::AllreduceRingChunked<float>>>(
      context, "gloo ring-chunked",
      // Below 1 MiB it stalls for tens of milliseconds after being built and after barriers
      // (shared/research/environment.md §3), and the stalls spill into the next measurement.
      size_t{1} << 20));
  out.push_back(std::make_unique<NewApiRing>(context));
  return out;
}

}  // namespace cohort::bench
