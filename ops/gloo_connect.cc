#include "ops/gloo_connect.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/address.h>
#include <gloo/transport/tcp/device.h>

#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "base/fd.h"
#include "base/mutex.h"
#include "ops/gloo_guard.h"

namespace cohort::ops {
namespace {

// Connects to `addr` and hangs up at once; errors do not matter (the pair may be gone).
void knock(const sockaddr_storage& addr) {
  Fd fd(::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return;
  socklen_t len = addr.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), len) == 0) return;
  if (errno != EINPROGRESS) return;
  // The pairs listen on this host: a connect either completes or is refused within moments.
  pollfd done{fd.get(), POLLOUT, 0};
  ::poll(&done, 1, 200);
}

// A store that remembers the pair addresses this rank publishes (connectFullMesh sets them under
// the key "<rank>", (size - 1) equal blocks, one per peer), so that a cancellation can knock on
// this rank's listening pairs.
class PublishedAddresses final : public gloo::rendezvous::Store {
 public:
  PublishedAddresses(gloo::rendezvous::Store& inner, int rank, int size,
                     std::function<void()> on_published)
      : inner_(inner),
        key_(std::to_string(rank)),
        peers_(size - 1),
        on_published_(std::move(on_published)) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    if (key == key_) {
      MutexLock lock(mutex_);
      mine_ = data;
    }
    inner_.set(key, data);
    if (key == key_ && on_published_) on_published_();
  }
  std::vector<char> get(const std::string& key) override { return inner_.get(key); }
  void wait(const std::vector<std::string>& keys) override { inner_.wait(keys); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    inner_.wait(keys, timeout);
  }

  // Thread-safe. Connects to each of this rank's listening pairs, once they are published. It
  // runs as a cancellation hook, which must not throw: an address Gloo cannot read back is left
  // to Gloo's own timeout.
  void knock_on_listeners() const noexcept {
    MutexLock lock(mutex_);
    if (peers_ <= 0 || mine_.empty() || mine_.size() % peers_ != 0) return;
    size_t block = mine_.size() / peers_;
    for (int i = 0; i < peers_; ++i) {
      auto begin = mine_.begin() + static_cast<std::ptrdiff_t>(i * block);
      try {
        gloo::transport::tcp::Address address(std::vector<char>(begin, begin + block));
        knock(address.getSockaddr());
      } catch (const std::exception&) {
      }
    }
  }

 private:
  gloo::rendezvous::Store& inner_;
  const std::string key_;
  const int peers_;
  std::function<void()> on_published_;
  mutable Mutex mutex_;
  std::vector<char> mine_ GUARDED_BY(mutex_);
};

}  // namespace

std::shared_ptr<gloo::Context> connect_full_mesh(const GlooBackendOptions& options,
                                                 gloo::rendezvous::Store& store) {
  std::shared_ptr<gloo::Context> result;
  gloo_guard("connect", options.rank, options.size, [&] {
    throw_if_cancelled(options.cancel);
    gloo::transport::tcp::attr attr;
    attr.hostname = options.hostname;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(options.rank, options.size);
    context->setTimeout(options.timeout);
    gloo::rendezvous::PrefixStore prefixed(options.prefix, store);
    PublishedAddresses published(prefixed, options.rank, options.size, options.on_published);
    try {
      CancelHook hook(options.cancel,
                      [&published](const std::string&) { published.knock_on_listeners(); });
      context->connectFullMesh(published, device);
    } catch (...) {
      // A knocked-on pair fails as soon as the knock hangs up: the cancellation is the cause.
      throw_if_cancelled(options.cancel);
      throw;
    }
    // Knocked-on pairs may also look connected: the context is not the mesh it seems.
    throw_if_cancelled(options.cancel);
    result = context;
  });
  return result;
}

}  // namespace cohort::ops
